package kuberuntime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// gatedRuntime holds every RunPodSandbox until released, and records how
// many were in flight at most.
type gatedRuntime struct {
	runtimeapi.RuntimeServiceClient
	mu       sync.Mutex
	inFlight int
	most     int
	release  chan struct{}
}

func (g *gatedRuntime) RunPodSandbox(ctx context.Context, r *runtimeapi.RunPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.mu.Unlock()
	<-g.release
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return g.RuntimeServiceClient.RunPodSandbox(ctx, r, opts...)
}

func (g *gatedRuntime) counts() (inFlight, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, g.most
}

// A batch of new pods sends at most ParallelCreations sandbox creations
// to the runtime at once; the others wait their turn and all start.
func TestSandboxCreationsAreBounded(t *testing.T) {
	const limit, pods = 2, 5
	var gate *gatedRuntime
	e := newEnv(t, func(c *Config, _ *ImageConfig) {
		gate = &gatedRuntime{RuntimeServiceClient: c.Runtime, release: make(chan struct{})}
		c.Runtime, c.ParallelCreations = gate, limit
	})
	var wg sync.WaitGroup
	results := make([]SyncResult, pods)
	for i := range pods {
		p := newPod("app")
		p.Name, p.UID = fmt.Sprintf("pod-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		st := e.status(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.m.SyncPod(e.ctx, Inputs{Pod: p, Status: st})
		}()
	}
	for left := pods; left > 0; left-- {
		want := min(limit, left)
		waitFor(t, fmt.Sprintf("%d sandbox creations in flight", want), func() bool { n, _ := gate.counts(); return n == want })
		gate.release <- struct{}{}
	}
	wg.Wait()
	if _, most := gate.counts(); most != limit {
		t.Errorf("at most %d sandbox creations in flight, want %d", most, limit)
	}
	for i, r := range results {
		if len(r.Started) != 1 {
			t.Errorf("pod-%d started %v, want [app]", i, r.Started)
		}
	}
}

// waitFor polls cond (the syncs run on their own goroutines).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
