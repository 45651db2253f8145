package stats

import (
	"sync"

	"golang.org/x/sys/unix"
)

// fileCache keeps open, between /metrics/cadvisor scrapes, the files every
// scrape reads (a cgroup's statistics, a sandbox's /proc/<pid>/net/dev):
// reading one again is then a single pread at offset 0, which makes the
// kernel render it afresh, instead of openat (a path walk and a kernfs
// open), read, read and close. Three quarters of a scrape's cost was those
// system calls.
//
// Invariants: a file whose cgroup was removed fails the pread with ENODEV
// and is opened again by path (the path may name a new cgroup); a file not
// read by a scrape is closed at its end, so a removed cgroup or a gone
// sandbox's network namespace is never held longer than one scrape; the
// cache holds at most a quarter of the process's open file limit, files
// beyond it are read the plain way. One scrape uses it at a time.
type fileCache struct {
	mu    sync.Mutex
	files map[string]*cachedFile
	gen   uint64
	limit int
}

type cachedFile struct {
	fd  int
	gen uint64 // the scrape that last read it
}

func newFileCache() *fileCache {
	limit := 256
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur/4 > uint64(limit) {
		limit = int(min(rl.Cur/4, 1<<16))
	}
	return &fileCache{files: map[string]*cachedFile{}, limit: limit}
}

// acquire hands the cache to one scrape; false when another scrape holds
// it (that one then reads the plain way).
func (c *fileCache) acquire() bool {
	if c == nil || !c.mu.TryLock() {
		return false
	}
	c.gen++
	return true
}

// release closes the files this scrape did not read and hands the cache
// back.
func (c *fileCache) release() {
	for path, f := range c.files {
		if f.gen != c.gen {
			unix.Close(f.fd)
			delete(c.files, path)
		}
	}
	c.mu.Unlock()
}

// closeAll closes every kept file (tests; the kubelet keeps them for life).
func (c *fileCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for path, f := range c.files {
		unix.Close(f.fd)
		delete(c.files, path)
	}
}

// lookup returns the kept file for path (the reader's NUL-terminated path
// buffer, without its NUL) and marks it read by this scrape.
func (c *fileCache) lookup(path []byte) (int, bool) {
	f, ok := c.files[string(path)] // no allocation for the lookup
	if !ok {
		return 0, false
	}
	f.gen = c.gen
	return f.fd, true
}

// keep records fd as the open file for path; false when the cache is full.
func (c *fileCache) keep(path []byte, fd int) bool {
	if len(c.files) >= c.limit {
		return false
	}
	c.files[string(path)] = &cachedFile{fd: fd, gen: c.gen}
	return true
}

// forget drops the kept file for path and closes it.
func (c *fileCache) forget(path []byte) {
	if f, ok := c.files[string(path)]; ok {
		unix.Close(f.fd)
		delete(c.files, string(path))
	}
}
