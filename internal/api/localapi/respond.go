package localapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// writeJSON answers code with v encoded as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}

// writeError answers err as the API server does: its Status when it is an
// API error, else an InternalError Status.
func writeError(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		klog.ErrorS(err, "Local API request failed")
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, &st)
}

// warn adds an API warning: kubectl prints it as "Warning: <text>".
func warn(w http.ResponseWriter, text string) {
	w.Header().Add("Warning", fmt.Sprintf("299 - %q", text))
}

// Errors with the API server's texts.
func errNotFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func errMethodNotAllowed(verb, resource string) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: resource}, verb)
}

func errBadRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// resourceNotFound is the API server's answer for a path it does not serve.
func resourceNotFound() error {
	return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

// Output formats a client may ask for in Accept.
type format int

const (
	formatObject format = iota
	// formatTable is meta.k8s.io Table (server-side printing).
	formatTable
	// formatMetadata is meta.k8s.io PartialObjectMetadata(List).
	formatMetadata
)

// negotiated is the output a request asked for.
type negotiated struct {
	format format
	// groupVersion of the Table or PartialObjectMetadata asked for.
	groupVersion string
}

// negotiate picks the first entry of Accept this server can produce: JSON
// objects, or meta.k8s.io/v1 (v1beta1) Tables and PartialObjectMetadata,
// which kubectl asks for. Protobuf, CBOR or YAML alone are refused with
// 406, as the API server refuses what it cannot encode.
func negotiate(r *http.Request) (negotiated, error) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		return negotiated{}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json":
		case "*/*", "application/*":
			return negotiated{}, nil
		default:
			continue
		}
		as := params["as"]
		if as == "" {
			return negotiated{}, nil
		}
		if params["g"] != metav1.GroupName || (params["v"] != "v1" && params["v"] != "v1beta1") {
			continue
		}
		gv := metav1.GroupName + "/" + params["v"]
		switch as {
		case "Table":
			return negotiated{format: formatTable, groupVersion: gv}, nil
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			return negotiated{format: formatMetadata, groupVersion: gv}, nil
		}
	}
	return negotiated{}, statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io")
}

// statusError is an API error of any code, reason and message.
func statusError(code int, reason metav1.StatusReason, message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message}}
}
