package stats

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/volume"
)

// podVolume is one volume of a pod whose usage is reported: one the
// kubelet keeps under the pod directory.
type podVolume struct {
	Name string
	Path string
	// Local marks a local ephemeral volume, counted in the pod's
	// ephemeral storage.
	Local bool
}

// reportedVolumes lists the volumes of pod that the kubelet stores under
// podsDir (emptyDir, configMap, secret, downwardAPI, projected), by name.
// hostPath and volumes the kubelet does not manage are not measured, as
// upstream reports no metrics for them.
func reportedVolumes(pod *v1.Pod, podsDir string) []podVolume {
	var out []podVolume
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := volume.VolumeDir(podsDir, string(pod.UID), v)
		if dir == "" {
			continue
		}
		out = append(out, podVolume{Name: v.Name, Path: dir, Local: volume.IsLocalEphemeral(v)})
	}
	return out
}

// dirUsage measures the tree at root as `du` does: allocated blocks times
// 512 bytes, one inode per entry (root included), a hard-linked inode
// counted once, and nothing on another filesystem (a mount inside the
// tree is not descended into). Entries removed during the walk are
// skipped.
func dirUsage(root string) (diskUsage, error) {
	var top unix.Stat_t
	if err := unix.Lstat(root, &top); err != nil {
		return diskUsage{}, &fs.PathError{Op: "lstat", Path: root, Err: err}
	}
	var u diskUsage
	seen := map[uint64]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
		if st.Dev != top.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		u.add(diskUsage{Bytes: uint64(st.Blocks) * 512, Inodes: 1})
		return nil
	})
	return u, err
}

// volumeSample is one measurement of a volume: its usage and the size of
// the filesystem holding it, at At.
type volumeSample struct {
	Usage diskUsage
	Fs    fsInfo
	At    time.Time
}

// measureVolume walks the volume and sizes its filesystem (the node's for
// a disk emptyDir, the tmpfs mounted there for a Memory one).
func measureVolume(path string) (volumeSample, error) {
	u, err := dirUsage(path)
	if err != nil {
		return volumeSample{}, err
	}
	fi, err := statFS(path)
	if err != nil {
		return volumeSample{}, err
	}
	return volumeSample{Usage: u, Fs: fi}, nil
}

// volumeCacheConfig is what newVolumeCache needs.
type volumeCacheConfig struct {
	Clock clock.Clock
	// Period is how long a measurement is kept at least; each is kept a
	// further random fraction of Period (upstream's jitter factor 1.0), so
	// volumes do not all get walked at once. Must be positive.
	Period time.Duration
	// Jitter returns a duration in [0, d); nil means random.
	Jitter func(d time.Duration) time.Duration
	// Measure measures a volume; nil means measureVolume.
	Measure func(path string) (volumeSample, error)
	// Spawn runs a measurement; nil means in a new goroutine. Measurements
	// run one at a time whatever Spawn does.
	Spawn func(func())
}

// volumeCache keeps the last measurement of each volume and renews it in
// the background once it is due, so that reading stats never waits for a
// walk of the volume.
// Invariants: at most one measurement runs per volume and in all; a
// volume's sample is replaced only by a newer successful one.
type volumeCache struct {
	cfg  volumeCacheConfig
	work sync.Mutex // held while a measurement runs

	mu      sync.Mutex
	entries map[string]*volumeEntry // by volume path
}

type volumeEntry struct {
	last    *volumeSample
	due     time.Time // zero: measure at the next read
	running bool
	// measure replaces the cache's Measure for this volume (a plugin
	// volume measured by its driver).
	measure func(path string) (volumeSample, error)
}

func newVolumeCache(cfg volumeCacheConfig) *volumeCache {
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	if cfg.Measure == nil {
		cfg.Measure = measureVolume
	}
	if cfg.Spawn == nil {
		cfg.Spawn = func(f func()) { go f() }
	}
	return &volumeCache{cfg: cfg, entries: map[string]*volumeEntry{}}
}

// get returns the last sample of the volume at path, if any, and starts a
// new measurement when one is due and none is running.
func (c *volumeCache) get(path string) (volumeSample, bool) { return c.getWith(path, nil) }

// getWith is get for a volume measured by measure (nil: the cache's own).
func (c *volumeCache) getWith(path string, measure func(string) (volumeSample, error)) (volumeSample, bool) {
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	e, ok := c.entries[path]
	if !ok {
		e = &volumeEntry{}
		c.entries[path] = e
	}
	e.measure = measure
	start := !e.running && !now.Before(e.due)
	if start {
		e.running = true
	}
	c.mu.Unlock()
	if start {
		c.cfg.Spawn(func() { c.refresh(path, e) })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.last == nil {
		return volumeSample{}, false
	}
	return *e.last, true
}

// refresh measures one volume and stores the sample in e.
func (c *volumeCache) refresh(path string, e *volumeEntry) {
	measure := c.cfg.Measure
	c.mu.Lock()
	if e.measure != nil {
		measure = e.measure
	}
	c.mu.Unlock()
	c.work.Lock()
	s, err := measure(path)
	c.work.Unlock()
	now := c.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.running = false
	switch {
	case err == nil:
		s.At = now
		e.last = &s
		e.due = now.Add(c.cfg.Period + c.cfg.Jitter(c.cfg.Period))
	case errors.Is(err, fs.ErrNotExist):
		// Not set up yet (or torn down): look again at the next read.
		e.due = time.Time{}
	default:
		klog.V(4).InfoS("Failed to calculate volume metrics", "path", path, "err", err)
		e.due = now.Add(c.cfg.Period + c.cfg.Jitter(c.cfg.Period))
	}
}

// keep forgets the volumes not in paths (pods gone, or no longer running).
func (c *volumeCache) keep(paths map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.entries {
		if !paths[p] {
			delete(c.entries, p)
		}
	}
}

// volumeInput is a pod volume with its last sample.
type volumeInput struct {
	Name   string
	Local  bool
	Sample volumeSample
	// PVC is the claim the volume comes from, if any.
	PVC *statsapi.PVCReference
}

// PluginVolume is a pod volume a plugin measures.
type PluginVolume struct {
	// Name is the pod's volume name.
	Name string
	// PVC names the claim the volume comes from (nil for inline volumes).
	PVC *statsapi.PVCReference
	// Path identifies the volume (its host path).
	Path string
	// Measure reads its usage and its filesystem's size; it may be slow
	// (a driver call) and runs in the background.
	Measure func() (VolumeUsage, error)
}

// VolumeUsage is a plugin volume's usage and its filesystem's size.
type VolumeUsage struct {
	UsedBytes, CapacityBytes, AvailableBytes uint64
	Inodes, InodesFree, InodesUsed           uint64
}

// MeasureDir measures a directory the node mounted (a local volume): its
// usage du-style and the filesystem holding it.
func MeasureDir(path string) (VolumeUsage, error) {
	s, err := measureVolume(path)
	if err != nil {
		return VolumeUsage{}, err
	}
	return VolumeUsage{UsedBytes: s.Usage.Bytes, InodesUsed: s.Usage.Inodes, CapacityBytes: s.Fs.Capacity,
		AvailableBytes: s.Fs.Available, Inodes: s.Fs.Inodes, InodesFree: s.Fs.InodesFree}, nil
}

func (u VolumeUsage) sample() volumeSample {
	return volumeSample{Usage: diskUsage{Bytes: u.UsedBytes, Inodes: u.InodesUsed},
		Fs: fsInfo{Capacity: u.CapacityBytes, Available: u.AvailableBytes, Used: u.UsedBytes, Inodes: u.Inodes, InodesFree: u.InodesFree}}
}

// volumeStats converts the samples to the Summary's entries, by name.
func volumeStats(vols []volumeInput) []statsapi.VolumeStats {
	if len(vols) == 0 {
		return nil
	}
	out := make([]statsapi.VolumeStats, 0, len(vols))
	for _, v := range vols {
		fs := v.Sample.Fs.capacityStats(v.Sample.At)
		fs.UsedBytes, fs.InodesUsed = u64(v.Sample.Usage.Bytes), u64(v.Sample.Usage.Inodes)
		out = append(out, statsapi.VolumeStats{Name: v.Name, FsStats: *fs, PVCRef: v.PVC})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
