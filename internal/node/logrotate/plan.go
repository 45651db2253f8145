package logrotate

import (
	"sort"
	"strings"
)

const (
	// TimestampFormat is the suffix of a rotated log, as upstream.
	TimestampFormat = "20060102-150405"
	compressSuffix  = ".gz"
	tmpSuffix       = ".tmp"
)

// Policy says when a log is rotated and how many files are kept.
type Policy struct {
	// MaxSize in bytes at which the current log is rotated; negative
	// disables rotation.
	MaxSize int64
	// MaxFiles is the most log files kept per container, the current one
	// included; at least 2.
	MaxFiles int
}

// Plan is what to do with a container's rotated files before its current
// log is rotated once more.
type Plan struct {
	// Remove lists leftovers of interrupted rotations (temporary files,
	// uncompressed files whose .gz exists) and the oldest rotated files
	// beyond the limit, oldest first.
	Remove []string
	// Compress lists the rotated files that stay but are not compressed yet.
	Compress []string
}

// PlanRotation decides, from the files already rotated from one log (every
// "<log>.*"), which to remove and which to compress so that after the
// rotation at most maxFiles files exist: the new current log, the newly
// rotated one (left uncompressed for readers still on it), and maxFiles-2
// older ones. It is pure.
func PlanRotation(rotated []string, maxFiles int) Plan {
	var p Plan
	set := make(map[string]bool, len(rotated))
	for _, f := range rotated {
		set[f] = true
	}
	var kept []string
	for _, f := range rotated {
		switch {
		case strings.HasSuffix(f, tmpSuffix):
			p.Remove = append(p.Remove, f) // an interrupted compression
		case !strings.HasSuffix(f, compressSuffix) && set[f+compressSuffix]:
			p.Remove = append(p.Remove, f) // compressed already, removal was interrupted
		default:
			kept = append(kept, f)
		}
	}
	// The timestamp suffix sorts oldest first.
	sort.Strings(kept)
	keep := maxFiles - 2
	if keep < 0 {
		keep = 0
	}
	if excess := len(kept) - keep; excess > 0 {
		p.Remove = append(p.Remove, kept[:excess]...)
		kept = kept[excess:]
	}
	for _, f := range kept {
		if !strings.HasSuffix(f, compressSuffix) {
			p.Compress = append(p.Compress, f)
		}
	}
	return p
}

// NeedsRotation reports whether a current log of size bytes is due.
func NeedsRotation(size int64, p Policy) bool {
	return p.MaxSize >= 0 && size >= p.MaxSize
}
