package stats

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// gzipWriters are reused between scrapes: a gzip writer holds several
// hundred kilobytes of compressor state.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// compressedBody returns where to write the body of r's answer: gzip
// (Content-Encoding set on w) when the client accepts it, as upstream's
// promhttp answers Prometheus, otherwise w itself; done finishes the
// stream. BestSpeed: on a /metrics/cadvisor body (long label sets repeated
// on every series) it compresses 7:1 like the default level, at a fifth of
// its CPU (docs/metrics.md has the numbers).
func compressedBody(w http.ResponseWriter, r *http.Request) (body io.Writer, done func() error) {
	if !acceptsGzip(r.Header.Values("Accept-Encoding")) {
		return w, func() error { return nil }
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(w)
	return zw, func() error {
		err := zw.Close()
		zw.Reset(io.Discard)
		gzipWriters.Put(zw)
		return err
	}
}

// acceptsGzip reads Accept-Encoding header values (RFC 9110 12.5.3): gzip
// (or x-gzip, or *) listed without a zero q-value.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			if qZero(params) {
				continue
			}
			return true
		}
	}
	return false
}

// qZero reports whether the parameters of one Accept-Encoding item carry
// q=0 (the coding is refused).
func qZero(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q == 0
	}
	return false
}
