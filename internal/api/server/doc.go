// Package server owns the kubelet's HTTP endpoints: the healthz port and
// the read-only port (/pods, /healthz). Handlers only read the managers'
// state; they own none.
package server
