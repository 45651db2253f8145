// Package server owns the kubelet's HTTP endpoints: the healthz port, the
// read-only port and the kubelet API's mux, with upstream's gating of the
// debugging handlers and its server timeouts. Handlers only read the
// managers' state; they own none.
package server
