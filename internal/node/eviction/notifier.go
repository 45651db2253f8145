package eviction

import (
	"io"
)

// memoryNotifier is a registered memory threshold; Close unregisters it.
type memoryNotifier interface {
	io.Closer
}
