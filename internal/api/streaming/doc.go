// Package streaming serves the kubelet's exec, attach, portForward and run
// endpoints. Like upstream it asks the runtime (CRI Exec/Attach/PortForward)
// for a streaming URL and proxies the client's upgraded connection (SPDY or
// WebSocket) to it byte for byte; /run uses CRI ExecSync.
package streaming
