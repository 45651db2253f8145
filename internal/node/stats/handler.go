package stats

import (
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/klog/v2"
)

// SummaryHandler serves /stats/summary as upstream does: GET or POST,
// only_cpu_and_memory=true (as the single value of that query or form
// parameter) for the CPU-and-memory subset, the Summary as indented JSON,
// and a plain-text 500 "Internal Error: ..." when it cannot be built.
func (p *Provider) SummaryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "405: Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		logger := klog.FromContext(r.Context())
		if err := r.ParseForm(); err != nil {
			writeError(w, logger, fmt.Errorf("parse form failed: %w", err))
			return
		}
		only := onlyCPUAndMemory(r.Form["only_cpu_and_memory"])
		summary, err := p.Summary(r.Context(), only)
		if err != nil {
			writeError(w, logger, err)
			return
		}
		body, err := json.MarshalIndent(summary, "", " ")
		if err != nil {
			writeError(w, logger, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write(body); err != nil {
			logger.Error(err, "Error writing response")
		}
	})
}

// onlyCPUAndMemory is true only for exactly one value, "true".
func onlyCPUAndMemory(values []string) bool {
	return len(values) == 1 && values[0] == "true"
}

func writeError(w http.ResponseWriter, logger klog.Logger, err error) {
	logger.Error(err, "HTTP InternalServerError serving", "request", "/stats/summary")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(fmt.Sprintf("Internal Error: %v", err)))
}
