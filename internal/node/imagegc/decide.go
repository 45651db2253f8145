package imagegc

import (
	"sort"
	"time"
)

// Policy is the image GC policy from the KubeletConfiguration.
type Policy struct {
	// HighThresholdPercent of image filesystem usage at or above which
	// images are collected; 100 disables collection for space.
	HighThresholdPercent int
	// LowThresholdPercent is the usage collection frees down to.
	LowThresholdPercent int
	// MinAge: an image first detected less than this ago is kept.
	MinAge time.Duration
	// MaxAge: an unused image not used for longer is removed whatever the
	// disk usage; 0 disables.
	MaxAge time.Duration
}

// Image is one image as the runtime lists it.
type Image struct {
	ID       string
	RepoTags []string
	Size     int64
	Pinned   bool
}

// Record is what the GC remembers of one image.
type Record struct {
	ID            string
	FirstDetected time.Time
	// LastUsed is the last detection that saw it in use; zero if never.
	LastUsed time.Time
	Size     int64
	Pinned   bool
}

// Records updates the records from one detection at now: images new to
// it are first detected at detectTime, images in use get LastUsed now,
// and images gone from the runtime are forgotten. It is pure: old is not
// modified.
func Records(old map[string]Record, images []Image, inUse map[string]bool, detectTime, now time.Time) map[string]Record {
	out := make(map[string]Record, len(images))
	for _, img := range images {
		r, ok := old[img.ID]
		if !ok {
			r = Record{ID: img.ID, FirstDetected: detectTime}
		}
		if inUse[img.ID] {
			r.LastUsed = now
		}
		r.Size, r.Pinned = img.Size, img.Pinned
		out[img.ID] = r
	}
	return out
}

// EvictionOrder lists the records that may be removed (not in use, not
// pinned, not kept), least recently used first, ties broken by first
// detection. It is pure.
func EvictionOrder(records map[string]Record, inUse, keep map[string]bool) []Record {
	var out []Record
	for id, r := range records {
		if inUse[id] || keep[id] || r.Pinned {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].LastUsed.Before(out[j].LastUsed)
		}
		if !out[i].FirstDetected.Equal(out[j].FirstDetected) {
			return out[i].FirstDetected.Before(out[j].FirstDetected)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// SelectForAge returns the candidates (in eviction order) not used for
// longer than MaxAge at now. Nothing is old before the GC itself has run
// for MaxAge (began), since usage before it is unknown. It is pure.
func SelectForAge(candidates []Record, p Policy, now, began time.Time) []Record {
	if p.MaxAge <= 0 || now.Sub(began) <= p.MaxAge {
		return nil
	}
	var out []Record
	for _, r := range candidates {
		if now.Sub(r.LastUsed) > p.MaxAge {
			out = append(out, r)
		}
	}
	return out
}

// BytesToFree is how much must go to bring usage from the high threshold
// down to the low one; zero when usage is below the high threshold.
func BytesToFree(capacity, available int64, p Policy) int64 {
	if capacity <= 0 {
		return 0
	}
	if available > capacity {
		available = capacity
	}
	usage := 100 - int(available*100/capacity)
	if usage < p.HighThresholdPercent {
		return 0
	}
	return capacity*int64(100-p.LowThresholdPercent)/100 - available
}

// UsagePercent is the used share of the filesystem, as upstream rounds it.
func UsagePercent(capacity, available int64) int {
	if capacity <= 0 {
		return 0
	}
	if available > capacity {
		available = capacity
	}
	return 100 - int(available*100/capacity)
}

// SelectForSpace returns the candidates (in eviction order) to remove to
// free bytes: those used before now and first detected at least MinAge
// ago, until their sizes add up to bytes. It is pure.
func SelectForSpace(candidates []Record, p Policy, now time.Time, bytes int64) []Record {
	var out []Record
	var freed int64
	for _, r := range candidates {
		if freed >= bytes {
			break
		}
		if !r.LastUsed.Before(now) || now.Sub(r.FirstDetected) < p.MinAge {
			continue
		}
		out = append(out, r)
		freed += r.Size
	}
	return out
}
