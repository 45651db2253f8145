// Package logs serves the kubelet's log endpoints: /containerLogs/ streams a
// container's CRI-format log file (tail, since, timestamps, byte limit and
// follow across rotation), and /logs/ serves the node's log directory.
// ReadLogs is the reusable reader behind the container endpoint.
//
// Why not k8s.io/cri-client/pkg/logs.ReadLogs, which upstream uses: linking
// it costs about 350 KB of stripped binary (it imports the remote CRI client
// and its OpenTelemetry gRPC instrumentation), it needs the whole
// cri-api RuntimeService interface only to ask whether a container runs,
// it waits on the wall clock instead of an injected one, and when following
// it stays on the old file after a create-mode rotation, where this reader
// moves on to the new one.
package logs
