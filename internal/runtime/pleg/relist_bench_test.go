package pleg

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// BenchmarkRelist: one steady-state relist (nothing changed) of 50, 100
// and 250 running pods (a sandbox and one container each) on the fake CRI
// behind gRPC, as the kubelet relists every second on containerd 1.6. The
// cost per pod (ns/pod) should stay flat as pods grow.
func BenchmarkRelist(b *testing.B) {
	for _, n := range []int{50, 100, 250} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			clk := testingclock.NewFakeClock(time.Unix(1000, 0))
			m := runningPods(b, clk, n)
			p := New(Config{Lister: m, Clock: clk, RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute})
			ctx := context.Background()
			p.Relist(ctx) // the first relist reports every container started
			for len(p.Events()) > 0 {
				<-p.Events()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p.Relist(ctx)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
			if len(p.Events()) > 0 {
				b.Fatalf("a steady relist emitted %d events", len(p.Events()))
			}
		})
	}
}

// runningPods starts n pods through a runtime manager on the fake CRI.
func runningPods(b *testing.B, clk *testingclock.FakeClock, n int) *kuberuntime.Manager {
	cri := critest.New(b, clk)
	dir := b.TempDir()
	m := kuberuntime.NewManager(kuberuntime.Config{
		Runtime: cri.RuntimeClient, Clock: clk, Recorder: events.LogRecorder{},
		Images: kuberuntime.NewImagePuller(kuberuntime.ImageConfig{Images: cri.ImageClient, Clock: clk, Recorder: events.LogRecorder{}}),
		Spec:   criconfig.Options{PodLogsDir: filepath.Join(dir, "logs")}, PodsDir: filepath.Join(dir, "pods"),
	})
	ctx := context.Background()
	for i := range n {
		uid := fmt.Sprintf("uid-%03d", i)
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: "pod-" + uid, Namespace: "default"},
			Spec: v1.PodSpec{DNSPolicy: v1.DNSDefault, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		st, err := m.GetPodStatus(ctx, p.UID, p.Name, p.Namespace)
		if err != nil {
			b.Fatal(err)
		}
		if res := m.SyncPod(ctx, kuberuntime.Inputs{Pod: p, Status: st}); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	return m
}
