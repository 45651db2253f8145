package pullprogress

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of a Sampler.
var (
	// ErrUnsupported: the runtime cannot tell (no content service on its
	// socket, or it refuses us). The pull goes on without progress.
	ErrUnsupported = errors.New("the image service does not report pull progress")
	// ErrNotYet: the runtime does not know the image's size yet (its
	// manifest has not arrived).
	ErrNotYet = errors.New("image manifest not fetched yet")
)

// Progress is one sample of a pull, in bytes of the image's config and
// layers (compressed, as the registry sends them).
type Progress struct {
	// Total is the size of the config and every layer.
	Total int64
	// Done is what is in the content store: complete blobs (also those
	// that were there before the pull) and what was written of the others.
	Done int64
	// Fetched is the part of Done that this pull downloaded.
	Fetched int64
}

// Sampler samples one pull.
type Sampler func(ctx context.Context) (Progress, error)

// Blob is one blob of an image, as its manifest lists it.
type Blob struct {
	Digest string
	Size   int64
}

// Stored is what the content store knows of a blob: committed (with the
// time of its commit), or being written (Offset bytes so far).
type Stored struct {
	Committed   bool
	CommittedAt time.Time
	Offset      int64
}

// Measure computes the progress of a pull that started at since, of an
// image made of blobs, from what the content store holds of each. A blob
// committed before since was already there: it counts as done, not as
// fetched.
func Measure(blobs []Blob, stored map[string]Stored, since time.Time) Progress {
	var p Progress
	for _, b := range blobs {
		p.Total += b.Size
		s, ok := stored[b.Digest]
		switch {
		case !ok:
		case s.Committed:
			p.Done += b.Size
			if !s.CommittedAt.Before(since) {
				p.Fetched += b.Size
			}
		default:
			n := min(max(s.Offset, 0), b.Size)
			p.Done += n
			p.Fetched += n
		}
	}
	return p
}

// Note is the progress note of a sample: bytes done of total, and the rate
// since the previous sample (fetched bytes over elapsed time), e.g.
// "12.0 MiB of 40.0 MiB (30%), 1.2 MiB/s". Once every byte is there the
// runtime is unpacking the layers.
func Note(p Progress, fetchedBefore int64, elapsed time.Duration) string {
	pct := int64(100)
	if p.Total > 0 {
		pct = p.Done * 100 / p.Total
	}
	s := fmt.Sprintf("%s of %s (%d%%)", Bytes(p.Done), Bytes(p.Total), pct)
	if p.Total > 0 && p.Done >= p.Total {
		return s + ", unpacking"
	}
	if elapsed > 0 {
		s += ", " + Bytes(Rate(p.Fetched-fetchedBefore, elapsed)) + "/s"
	}
	return s
}

// Rate is bytes per second, never negative.
func Rate(bytes int64, elapsed time.Duration) int64 {
	if elapsed <= 0 || bytes <= 0 {
		return 0
	}
	return int64(float64(bytes) / elapsed.Seconds())
}

// Bytes formats a size in binary units with one decimal: "512 B",
// "1.5 KiB", "40.0 MiB", "2.3 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// Interval is how long to wait for the update after n updates: 10 s, doubled
// after every 6 updates, at most 5 minutes: the first minute gets 6 updates,
// a 15 minutes pull 24, which keeps a long pull within the event spam
// filter's budget (25 at once, then one per 5 minutes).
func Interval(n int) time.Duration {
	d := 10 * time.Second
	for i := 0; i < n/6 && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}
