package syncloop

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/pods/podmanager"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// BenchmarkHousekeeping: one housekeeping pass (every 2 s in the kubelet)
// with 50, 100 and 250 pods wanted and running on the fake CRI behind gRPC
// (a sandbox and one container each, a worker each, their directories on
// disk): the runtime listing, the orphan and cgroup/volume/directory
// bookkeeping, nothing to clean. The cost per pod (ns/pod) should stay
// flat as pods grow.
func BenchmarkHousekeeping(b *testing.B) {
	for _, n := range []int{50, 100, 250} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			clk := testingclock.NewFakeClock(time.Unix(1000, 0))
			cri := critest.New(b, clk)
			dir := b.TempDir()
			m := kuberuntime.NewManager(kuberuntime.Config{
				Runtime: cri.RuntimeClient, Clock: clk, Recorder: events.LogRecorder{},
				Images: kuberuntime.NewImagePuller(kuberuntime.ImageConfig{Images: cri.ImageClient, Clock: clk, Recorder: events.LogRecorder{}}),
				Spec:   criconfig.Options{PodLogsDir: filepath.Join(dir, "logs")}, PodsDir: filepath.Join(dir, "pods"),
			})
			ctx := context.Background()
			pods := podmanager.NewManager()
			workers := &fakeWorkers{states: map[types.UID]podworkers.PodState{}}
			for i := range n {
				uid := fmt.Sprintf("uid-%03d", i)
				p := mkPod(uid, "pod-"+uid, nil)
				p.Spec.DNSPolicy = v1.DNSDefault
				p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox"}}
				st, err := m.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
				if err != nil {
					b.Fatal(err)
				}
				if res := m.SyncPod(ctx, kuberuntime.Inputs{Pod: p, Status: st}); res.Err != nil {
					b.Fatal(res.Err)
				}
				pods.AddOrUpdate(p)
				workers.states[p.UID] = podworkers.PodState{State: podworkers.Syncing}
			}
			d := NewDispatcher(DispatcherConfig{Pods: pods, Workers: workers, Runtime: m, SourcesReady: func() bool { return true }})
			d.HandleHousekeeping(ctx)
			waitIdle(d)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				d.HandleHousekeeping(ctx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
			b.StopTimer()
			waitIdle(d)
			if len(workers.forgotten) > 0 {
				b.Fatalf("housekeeping forgot %d wanted pods", len(workers.forgotten))
			}
		})
	}
}
