package shutdown

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Upstream's Test_migrateConfig.
func TestMigrateConfig(t *testing.T) {
	for _, tc := range []struct {
		name            string
		total, critical time.Duration
		want            []Period
	}{
		{"both", 300 * time.Second, 120 * time.Second, []Period{{Priority: 0, ShutdownGracePeriodSeconds: 180}, {Priority: podutil.SystemCriticalPriority, ShutdownGracePeriodSeconds: 120}}},
		{"only shutdownGracePeriod", 100 * time.Second, 0, []Period{{Priority: 0, ShutdownGracePeriodSeconds: 100}, {Priority: podutil.SystemCriticalPriority, ShutdownGracePeriodSeconds: 0}}},
		{"empty", 0, 0, nil},
		{"wrong", time.Second, 100 * time.Second, nil},
	} {
		if got := migrateConfig(tc.total, tc.critical); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	byPriority := &kubeletconfig.KubeletConfiguration{ShutdownGracePeriodByPodPriority: []Period{
		{Priority: 100000, ShutdownGracePeriodSeconds: 10}, {Priority: 0, ShutdownGracePeriodSeconds: 60}, {Priority: 10000, ShutdownGracePeriodSeconds: 20}}}
	if got := Periods(byPriority); fmt.Sprint(got) != "[{0 60} {10000 20} {100000 10}]" || PeriodRequested(got) != 90*time.Second {
		t.Errorf("Periods = %v (requested %v), want sorted by priority, 90s", got, PeriodRequested(got))
	}
}

// Upstream's Test_groupByPriority.
func TestGroupByPriority(t *testing.T) {
	names := func(gs []Group) string {
		var out [][]string
		for _, g := range gs {
			var ns []string
			for _, p := range g.Pods {
				ns = append(ns, p.Name)
			}
			out = append(out, ns)
		}
		return fmt.Sprint(out)
	}
	pod := func(name string, prio int32) *v1.Pod { return makePod(name, prio, nil) }
	migrated := GroupByPriority(migrateConfig(300*time.Second, 120*time.Second), []*v1.Pod{
		pod("normal-pod", 0), pod("highest-user-definable-pod", 1_000_000_000), pod("critical-pod", podutil.SystemCriticalPriority)})
	if got := names(migrated); got != "[[normal-pod highest-user-definable-pod] [critical-pod]]" {
		t.Errorf("migrated config: %s", got)
	}
	periods := []Period{{Priority: 1, ShutdownGracePeriodSeconds: 10}, {Priority: 2, ShutdownGracePeriodSeconds: 20},
		{Priority: 3, ShutdownGracePeriodSeconds: 30}, {Priority: 4, ShutdownGracePeriodSeconds: 40}}
	var pods []*v1.Pod
	for i := range 6 {
		pods = append(pods, pod(fmt.Sprintf("pod-%d", i), int32(i)))
	}
	if got := names(GroupByPriority(periods, pods)); got != "[[pod-0 pod-1] [pod-2] [pod-3] [pod-4 pod-5]]" {
		t.Errorf("pod priority: %s", got)
	}
}
