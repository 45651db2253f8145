// Package fileutil owns small file operations several packages share:
// writing a file whole (temporary file, fsync, rename), so that a reader
// or a kubelet restarted after a crash sees the old content or the new,
// never part of one.
package fileutil
