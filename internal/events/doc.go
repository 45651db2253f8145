// Package events owns the kubelet's event reasons, the small Recorder
// interface components emit them through, and the recorders: LogRecorder,
// and Broadcaster, which writes them to a Sink (the API server, or in
// standalone mode the Ring, an in-memory event store for the local API) with
// upstream's (client-go tools/record) correlation: spam filter,
// aggregation, de-duplication by patch, retries that never block the
// caller. We keep our own to keep client-go's record package, and the
// strategic merge patch library it links, out of the binary. Progress
// updates of a running operation (ProgressAnnotation) are one more
// occurrence of the event that announced it, written with a note, and have
// a spam budget of their own (SpamKey).
package events
