// Package events owns the kubelet's event reasons, the small Recorder
// interface components emit them through, and the recorders: LogRecorder
// for standalone mode and Broadcaster, which writes them to the API server
// with upstream's (client-go tools/record) correlation: spam filter,
// aggregation, de-duplication by patch, retries that never block the caller.
// We keep our own to keep client-go's record package, and the strategic
// merge patch library it links, out of the binary.
package events
