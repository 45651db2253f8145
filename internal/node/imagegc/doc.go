// Package imagegc owns image garbage collection, as upstream's image GC
// manager: it tracks when each image was first detected and last used (an
// image is in use while any container, running or not, references it) and
// every 5 minutes removes unused images not used for imageMaximumGCAge, and,
// when the image filesystem is at imageGCHighThresholdPercent or more, the
// least recently used unused images older than imageMinimumGCAge until
// usage is back to imageGCLowThresholdPercent.
//
// Invariants: Records, SelectForSpace and SelectForAge are pure; an image
// in use, pinned by the runtime or named as the runtime's sandbox image is
// never removed.
package imagegc
