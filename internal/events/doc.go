// Package events owns the kubelet's event reasons and the small Recorder
// interface components use to emit them. In standalone mode events go to the
// log and to a bounded Ring (the API server's event shape, for the local
// API); in cluster mode client-go's recorder satisfies the same interface.
// Progress updates of a running operation (ProgressAnnotation) are one more
// occurrence of the event that announced it, written with a note.
package events
