package framework

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRuntimeEndpoint(t *testing.T) {
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", "")
	if got := RuntimeEndpoint(); got != DefaultRuntimeEndpoint {
		t.Errorf("RuntimeEndpoint() = %q, want %q", got, DefaultRuntimeEndpoint)
	}
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", "unix:///tmp/other.sock")
	if got := RuntimeEndpoint(); got != "unix:///tmp/other.sock" {
		t.Errorf("RuntimeEndpoint() = %q, want the environment's value", got)
	}
}

// recordingTB records Fatalf instead of failing the real test.
type recordingTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func TestNewCRIClientFailsClearlyWithoutRuntime(t *testing.T) {
	old := ConnectTimeout
	ConnectTimeout = 300 * time.Millisecond
	defer func() { ConnectTimeout = old }()
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", "unix://"+filepath.Join(t.TempDir(), "missing.sock"))

	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewCRIClient(rec)
	}()
	<-done
	if !strings.Contains(rec.fatal, "not reachable") || !strings.Contains(rec.fatal, "hack/setup-node.sh") ||
		!strings.Contains(rec.fatal, "missing.sock") {
		t.Errorf("NewCRIClient did not fail with a clear message; got %q", rec.fatal)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, time.Second, time.Millisecond, "third call", func() (bool, error) {
		n++
		return n == 3, nil
	})
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

func TestUniqueName(t *testing.T) {
	a, b := UniqueName("pod"), UniqueName("pod")
	if a == b || !strings.HasPrefix(a, "pod-") || len(a) != len("pod-")+8 {
		t.Errorf("UniqueName gave %q and %q", a, b)
	}
}
