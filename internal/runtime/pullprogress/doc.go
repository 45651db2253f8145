// Package pullprogress reports how far a running image pull has come. A
// Source reads it from the runtime (Containerd: the manifest, committed blobs
// and active ingests of containerd's content store, over the image service
// socket); a Reporter turns samples into updates of the pod's Pulling event
// and a -v=2 log line, at most every 10 s. A runtime that cannot tell leaves
// pulls as they were, with nothing logged above -v=4.
package pullprogress
