package eviction

import (
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

func TestRankMemory(t *testing.T) {
	// within: Burstable under its request; be-small/be-big: BestEffort;
	// high: BestEffort but higher priority; nostats: no stats at all.
	within := testPod("within", "1Gi", 0)
	beSmall := testPod("be-small", "", 0)
	beBig := testPod("be-big", "", 0)
	high := testPod("high", "", 100)
	over := testPod("over", "100Mi", 0)
	nostats := testPod("nostats", "", 0)
	stats := StatsByUID(&statsapi.Summary{Pods: []statsapi.PodStats{
		podStats(within, 800*mi), podStats(beSmall, 10*mi), podStats(beBig, 300*mi),
		podStats(high, 900*mi), podStats(over, 350*mi),
	}})
	pods := []*v1.Pod{within, high, beSmall, over, beBig, nostats}
	Rank(evictionapi.SignalMemoryAvailable, pods, stats, false)
	want := []string{"nostats", "be-big", "over", "be-small", "high", "within"}
	if got := names(pods); !reflect.DeepEqual(got, want) {
		t.Errorf("rank = %v, want %v", got, want)
	}
}

func TestRankDisk(t *testing.T) {
	withFs := func(p *v1.Pod, root, logs, vol int64) statsapi.PodStats {
		ps := podStats(p, 0)
		ps.Containers[0].Rootfs = &statsapi.FsStats{UsedBytes: u64(root), InodesUsed: u64(root / mi)}
		ps.Containers[0].Logs = &statsapi.FsStats{UsedBytes: u64(logs), InodesUsed: u64(1)}
		ps.VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: u64(vol), InodesUsed: u64(vol / mi)}}}
		return ps
	}
	scratch := []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	rootHeavy := testPod("root-heavy", "", 0)
	logHeavy := testPod("log-heavy", "", 0)
	volHeavy := testPod("vol-heavy", "", 0)
	for _, p := range []*v1.Pod{rootHeavy, logHeavy, volHeavy} {
		p.Spec.Volumes = scratch
	}
	requested := testPod("requested", "", 0)
	requested.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
	stats := StatsByUID(&statsapi.Summary{Pods: []statsapi.PodStats{
		withFs(rootHeavy, 500*mi, 1*mi, 1*mi), withFs(logHeavy, 1*mi, 300*mi, 1*mi),
		withFs(volHeavy, 1*mi, 1*mi, 400*mi), withFs(requested, 900*mi, 0, 0),
	}})
	rank := func(sig evictionapi.Signal, dedicated bool) []string {
		pods := []*v1.Pod{requested, logHeavy, volHeavy, rootHeavy}
		Rank(sig, pods, stats, dedicated)
		return names(pods)
	}
	if got, want := rank(evictionapi.SignalNodeFsAvailable, false), []string{"root-heavy", "vol-heavy", "log-heavy", "requested"}; !reflect.DeepEqual(got, want) {
		t.Errorf("nodefs, shared filesystem: %v, want %v", got, want)
	}
	if got, want := rank(evictionapi.SignalNodeFsAvailable, true), []string{"vol-heavy", "log-heavy", "root-heavy", "requested"}; !reflect.DeepEqual(got, want) {
		t.Errorf("nodefs beside a dedicated imagefs (logs and volumes): %v, want %v", got, want)
	}
	if got, want := rank(evictionapi.SignalImageFsAvailable, true), []string{"root-heavy", "log-heavy", "vol-heavy", "requested"}; !reflect.DeepEqual(got, want) {
		t.Errorf("imagefs, dedicated (writable layers only): %v, want %v", got, want)
	}
	if got := rank(evictionapi.SignalNodeFsInodesFree, false); got[0] != "requested" {
		t.Errorf("inodes ignore storage requests: %v, want requested (most inodes) first", got)
	}
}

func TestRankPIDs(t *testing.T) {
	a, b, c := testPod("a", "", 0), testPod("b", "", 0), testPod("c", "", 10)
	withProcs := func(p *v1.Pod, n uint64) statsapi.PodStats {
		ps := podStats(p, 0)
		ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: &n}
		return ps
	}
	stats := StatsByUID(&statsapi.Summary{Pods: []statsapi.PodStats{withProcs(a, 5), withProcs(b, 50), withProcs(c, 500)}})
	pods := []*v1.Pod{c, a, b}
	Rank(evictionapi.SignalPIDAvailable, pods, stats, false)
	if got, want := names(pods), []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rank = %v, want %v (priority, then process count)", got, want)
	}
}

func TestMessage(t *testing.T) {
	hog := testPod("hog", "", 0)
	hog.Spec.Containers = append(hog.Spec.Containers, v1.Container{Name: "quiet", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}})
	at := time.Unix(1000, 0)
	stats := StatsByUID(&statsapi.Summary{Pods: []statsapi.PodStats{podStats(hog, 310*mi, 300*mi, 10*mi)}})
	ts := mustParse(evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}})
	msg, ann := Message(v1.ResourceMemory, hog, stats, ts, memObs(at, 90))
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. "
	if msg != want {
		t.Errorf("message:\n got %q\nwant %q", msg, want)
	}
	if ann[OffendingContainersKey] != "c" || ann[OffendingContainersUsageKey] != "300Mi" || ann[StarvedResourceKey] != "memory" {
		t.Errorf("annotations = %v", ann)
	}
	// A percentage threshold is shown as the quantity it stands for.
	ts = mustParse(evictionapi.ThresholdConfig{Hard: map[string]string{"memory.available": "50%"}})
	msg, _ = Message(v1.ResourceMemory, testPod("unknown", "", 0), stats, ts, memObs(at, 90))
	if !strings.HasPrefix(msg, "The node was low on resource: memory. Threshold quantity: 512Mi, available: 90Mi. ") {
		t.Errorf("message = %q", msg)
	}
}

func TestGracePeriod(t *testing.T) {
	hard := evictionapi.Threshold{Signal: evictionapi.SignalMemoryAvailable}
	soft := evictionapi.Threshold{Signal: evictionapi.SignalMemoryAvailable, GracePeriod: time.Minute}
	p := testPod("p", "", 0)
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(20))
	if g := GracePeriod(hard, p, 60); g != 1 {
		t.Errorf("hard = %d, want 1", g)
	}
	if g := GracePeriod(soft, p, 60); g != 20 {
		t.Errorf("soft with a larger maximum = %d, want the pod's 20", g)
	}
	if g := GracePeriod(soft, p, 5); g != 5 {
		t.Errorf("soft with a smaller maximum = %d, want 5", g)
	}
	if g := GracePeriod(soft, p, -1); g != 20 {
		t.Errorf("soft with a negative maximum = %d, want the pod's 20", g)
	}
}

func TestAdmit(t *testing.T) {
	be := testPod("be", "", 0)
	burstable := testPod("burstable", "10Mi", 0)
	tolerant := testPod("tolerant", "", 0)
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	static := testPod("static", "", 0)
	static.Annotations["kubernetes.io/config.source"] = "file"
	critical := testPod("critical", "", 2000000000)
	mem := []v1.NodeConditionType{v1.NodeMemoryPressure}
	disk := []v1.NodeConditionType{v1.NodeDiskPressure}
	tests := []struct {
		pod   *v1.Pod
		conds []v1.NodeConditionType
		want  bool
	}{
		{be, nil, true},
		{be, mem, false},
		{burstable, mem, true},
		{tolerant, mem, true},
		{burstable, disk, false},
		{tolerant, append(mem, v1.NodeDiskPressure), false},
		{static, disk, true},
		{critical, mem, true},
	}
	for _, tc := range tests {
		ok, reason, msg := Admit(tc.pod, tc.conds)
		if ok != tc.want {
			t.Errorf("%s under %v: admit = %v, want %v", tc.pod.Name, tc.conds, ok, tc.want)
		}
		if !ok && (reason != "Evicted" || msg != "The node had condition: "+condString(tc.conds)+". ") {
			t.Errorf("%s: reason %q message %q", tc.pod.Name, reason, msg)
		}
	}
}

func condString(c []v1.NodeConditionType) string {
	var s []string
	for _, x := range c {
		s = append(s, string(x))
	}
	return "[" + strings.Join(s, " ") + "]"
}
