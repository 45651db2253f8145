// Package logs serves the kubelet's log endpoints: /containerLogs/ streams a
// container's CRI-format log file (tail, since, timestamps, byte limit and
// follow across rotation), and /logs/ serves the node's log directory.
// ReadLogs is the reusable reader behind the container endpoint.
package logs
