package stats

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// usage is container_memory_usage_bytes of cgroup id.
func usage(t *testing.T, mfs map[string]*dto.MetricFamily, id string) float64 {
	t.Helper()
	v, ok := value(t, mfs, "container_memory_usage_bytes", map[string]string{"id": id})
	if !ok {
		t.Fatalf("container_memory_usage_bytes{id=%q} not scraped", id)
	}
	return v
}

// Kept files are read afresh on every scrape; the files of a container
// that is gone are closed by the scrape that no longer sees it; a full
// cache (or one another scrape holds) reads the plain way, with the same
// values.
func TestCadvisorKeptFiles(t *testing.T) {
	f := newCadvisorFixture(t)
	ctr := fixturePod + "/" + containerID
	_, mfs := f.scrape(t)
	if got := usage(t, mfs, ctr); got != 20_000_000 {
		t.Fatalf("usage %v", got)
	}
	cache := f.p.cadvisor.files
	kept := len(cache.files)
	if kept == 0 {
		t.Fatal("no file kept open")
	}
	fds := openFDs(t)

	writeTree(t, f.cg, map[string]string{"memory" + ctr + "/memory.usage_in_bytes": "123456"})
	_, mfs = f.scrape(t)
	if got := usage(t, mfs, ctr); got != 123456 {
		t.Errorf("usage after the change %v, want 123456", got)
	}
	if len(cache.files) != kept || openFDs(t) != fds {
		t.Errorf("second scrape: %d kept files (%d fds), want %d (%d): nothing new to open", len(cache.files), openFDs(t), kept, fds)
	}

	// Another scrape holds the cache: this one reads the plain way.
	cache.mu.Lock()
	_, mfs = f.scrape(t)
	cache.mu.Unlock()
	if got := usage(t, mfs, ctr); got != 123456 {
		t.Errorf("usage read without the cache %v, want 123456", got)
	}

	// The container is gone: its files are closed.
	f.rt.containers = nil
	f.scrape(t)
	for path := range cache.files {
		if filepath.Dir(path) == filepath.Join(f.cg, "memory"+ctr) {
			t.Errorf("%s still kept after its container went", path)
		}
	}
	if n := openFDs(t); n >= fds {
		t.Errorf("%d open files after the container went, %d before", n, fds)
	}

	// A full cache keeps nothing more and reads the same values.
	cache.closeAll()
	cache.limit = 3
	_, mfs = f.scrape(t)
	if len(cache.files) != 3 {
		t.Errorf("%d kept files, want the limit 3", len(cache.files))
	}
	if got := usage(t, mfs, fixturePod); got != 50_000_000 {
		t.Errorf("pod usage %v, want 50000000", got)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// countProcesses on the real /proc: this test process, with a socket open,
// counted as os.ReadDir and os.Readlink count it.
func TestCountProcessesRealProc(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	procs := filepath.Join(t.TempDir(), "cgroup.procs")
	if err := os.WriteFile(procs, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	got := countProcesses(newReader(nil), procs, "/proc")
	dir := fmt.Sprintf("/proc/%d/fd", os.Getpid())
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sockets uint64
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			sockets++
		}
	}
	// Both count the descriptor of the fd directory being read, as
	// cAdvisor's count does.
	if got.Processes != 1 || got.FDs != uint64(len(ents)) || got.Sockets != sockets || sockets == 0 {
		t.Errorf("counted %+v, want 1 process, %d descriptors and %d sockets", got, len(ents), sockets)
	}
}
