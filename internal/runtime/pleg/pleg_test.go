package pleg

import (
	"context"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

type states = map[types.UID]map[string]kuberuntime.ContainerState

func TestDiff(t *testing.T) {
	run, exit, created := kuberuntime.StateRunning, kuberuntime.StateExited, kuberuntime.StateCreated
	cases := []struct {
		name     string
		old, cur states
		want     []Event
	}{
		{name: "nothing changed", old: states{"p": {"c1": run}}, cur: states{"p": {"c1": run}}},
		{name: "container started", old: states{"p": {"c1": created}}, cur: states{"p": {"c1": run}},
			want: []Event{{ID: "p", Type: ContainerStarted, Data: "c1"}}},
		{name: "first relist sees running containers", old: nil, cur: states{"p": {"c1": run}},
			want: []Event{{ID: "p", Type: ContainerStarted, Data: "c1"}}},
		{name: "container died", old: states{"p": {"c1": run}}, cur: states{"p": {"c1": exit}},
			want: []Event{{ID: "p", Type: ContainerDied, Data: "c1"}}},
		{name: "container removed", old: states{"p": {"c1": exit, "c2": run}}, cur: states{"p": {"c2": run}},
			want: []Event{{ID: "p", Type: ContainerRemoved, Data: "c1"}}},
		{name: "pod gone", old: states{"p": {"c1": exit}}, cur: states{},
			want: []Event{{ID: "p", Type: ContainerRemoved, Data: "c1"}}},
		{name: "new container created", old: states{"p": {}}, cur: states{"p": {"c1": created}},
			want: []Event{{ID: "p", Type: ContainerChanged, Data: "c1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(tc.old, tc.cur)
			sort.Slice(got, func(i, j int) bool { return got[i].Data < got[j].Data })
			if len(got) != len(tc.want) {
				t.Fatalf("Diff = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Diff = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

type fakeLister struct{ pods []*kuberuntime.RunningPod }

func (f *fakeLister) GetPods(ctx context.Context, all bool) ([]*kuberuntime.RunningPod, error) {
	return f.pods, nil
}

func TestRelistEmitsAndHealth(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	l := &fakeLister{pods: []*kuberuntime.RunningPod{{UID: "p", Containers: []*kuberuntime.ContainerStatus{{ID: "c1", State: kuberuntime.StateRunning}}}}}
	p := New(Config{Lister: l, Clock: clk, RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute})
	p.Relist(context.Background())
	if e := <-p.Events(); e.Type != ContainerStarted || e.ID != "p" {
		t.Fatalf("event = %+v, want ContainerStarted for p", e)
	}
	l.pods[0].Containers[0].State = kuberuntime.StateExited
	p.Relist(context.Background())
	if e := <-p.Events(); e.Type != ContainerDied {
		t.Fatalf("event = %+v, want ContainerDied", e)
	}
	if ok, err := p.Healthy(); !ok {
		t.Fatalf("healthy right after a relist: %v", err)
	}
	clk.Step(3*time.Minute + time.Second)
	if ok, _ := p.Healthy(); ok {
		t.Fatal("PLEG still healthy after relisting stalled past the threshold")
	}
}

// Recent shares the last relist's pods while it is at most maxAge old.
func TestRecentSharesTheLastRelist(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	l := &fakeLister{pods: []*kuberuntime.RunningPod{{UID: "p"}}}
	p := New(Config{Lister: l, Clock: clk, RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute})
	if _, ok := p.Recent(2 * time.Second); ok {
		t.Fatal("Recent before any relist")
	}
	p.Relist(context.Background())
	for _, tc := range []struct {
		step time.Duration
		want bool
	}{{0, true}, {2 * time.Second, true}, {time.Millisecond, false}} {
		clk.Step(tc.step)
		pods, ok := p.Recent(2 * time.Second)
		if ok != tc.want || (ok && (len(pods) != 1 || pods[0].UID != "p")) {
			t.Errorf("%v after the relist: Recent = %v, %v; want ok %v", clk.Since(time.Unix(1000, 0)), pods, ok, tc.want)
		}
	}
}
