package localapi

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Cases of upstream's TestPrintPod (pkg/printers/internalversion), and the
// sidecar and terminating rules of printPod; cells are the first five
// (NAME, READY, STATUS, RESTARTS, AGE).
func TestPodRow(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := func(reason string) v1.ContainerState {
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(reason string, code int32) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
	}
	lastTerminated := func(d time.Duration) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{FinishedAt: ago(d)}}
	}
	pod := func(name string, containers, inits int, status v1.PodStatus) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: make([]v1.Container, containers), InitContainers: make([]v1.Container, inits)}, Status: status}
	}
	always := v1.ContainerRestartPolicyAlways
	sidecar := pod("sidecar", 1, 1, v1.PodStatus{Phase: v1.PodRunning,
		InitContainerStatuses: []v1.ContainerStatus{{Name: "side", Ready: true, Started: ptrTrue(), RestartCount: 1, State: running, LastTerminationState: lastTerminated(time.Minute)}},
		ContainerStatuses:     []v1.ContainerStatus{{Name: "main", Ready: true, State: running}},
		Conditions:            []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}}})
	sidecar.Spec.InitContainers[0] = v1.Container{Name: "side", RestartPolicy: &always}
	terminating := pod("terminating", 1, 0, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Ready: true, State: running}}})
	deleted := ago(10 * time.Second)
	terminating.DeletionTimestamp = &deleted
	aged := pod("aged", 1, 0, v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{State: waiting("ContainerCreating")}}})
	aged.CreationTimestamp = ago(3 * time.Hour)

	tests := []struct {
		pod  *v1.Pod
		want string
	}{
		{pod("test1", 2, 0, v1.PodStatus{Phase: "podPhase", ContainerStatuses: []v1.ContainerStatus{{Ready: true, RestartCount: 3, State: running}, {RestartCount: 3}}}),
			"[test1 1/2 podPhase 6 <unknown>]"},
		{pod("test2", 2, 0, v1.PodStatus{Phase: "podPhase", ContainerStatuses: []v1.ContainerStatus{{Ready: true, RestartCount: 3, State: running}, {State: waiting("ContainerWaitingReason"), RestartCount: 3}}}),
			"[test2 1/2 ContainerWaitingReason 6 <unknown>]"},
		{pod("test3", 2, 0, v1.PodStatus{Phase: "podPhase", ContainerStatuses: []v1.ContainerStatus{{State: waiting("ContainerWaitingReason"), RestartCount: 3}, {State: terminated("ContainerTerminatedReason", 0), RestartCount: 3}}}),
			"[test3 0/2 ContainerWaitingReason 6 <unknown>]"},
		{pod("test5", 2, 0, v1.PodStatus{Reason: "podReason", Phase: "podPhase", ContainerStatuses: []v1.ContainerStatus{{Ready: true, RestartCount: 3, State: running}, {Ready: true, RestartCount: 3}}}),
			"[test5 1/2 podReason 6 <unknown>]"},
		{pod("test6", 2, 0, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Ready: true, RestartCount: 3, State: terminated("Completed", 0)}, {Ready: true, RestartCount: 3, State: running}}}),
			"[test6 1/2 NotReady 6 <unknown>]"},
		{pod("test6b", 2, 0, v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Ready: true, RestartCount: 3, State: terminated("Completed", 0)}, {Ready: true, RestartCount: 3, State: running}}}),
			"[test6b 1/2 Running 6 <unknown>]"},
		{pod("test7", 1, 1, v1.PodStatus{Phase: "podPhase",
			InitContainerStatuses: []v1.ContainerStatus{{RestartCount: 3, State: running, LastTerminationState: lastTerminated(10 * time.Second)}},
			ContainerStatuses:     []v1.ContainerStatus{{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}}}),
			"[test7 0/1 Init:0/1 3 (10s ago) <unknown>]"},
		{pod("test9", 1, 2, v1.PodStatus{Phase: "podPhase",
			InitContainerStatuses: []v1.ContainerStatus{{State: terminated("", 0)}, {RestartCount: 3, State: running, LastTerminationState: lastTerminated(10 * time.Second)}},
			ContainerStatuses:     []v1.ContainerStatus{{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}}}),
			"[test9 0/1 Init:1/2 3 (10s ago) <unknown>]"},
		{pod("test11", 1, 1, v1.PodStatus{Phase: v1.PodRunning,
			InitContainerStatuses: []v1.ContainerStatus{{RestartCount: 2, State: terminated("", 0), LastTerminationState: lastTerminated(2 * time.Minute)}},
			ContainerStatuses:     []v1.ContainerStatus{{RestartCount: 4, State: running, LastTerminationState: lastTerminated(20 * time.Second)}}}),
			"[test11 0/1 Running 4 (20s ago) <unknown>]"},
		{pod("test12", 1, 0, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Ready: true, RestartCount: 3, State: running, LastTerminationState: lastTerminated(5 * 24 * time.Hour)}}}),
			"[test12 1/1 Running 3 (5d ago) <unknown>]"},
		{pod("init-error", 1, 1, v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: []v1.ContainerStatus{{State: terminated("Error", 1)}}}),
			"[init-error 0/1 Init:Error 0 <unknown>]"},
		{pod("init-waiting", 1, 1, v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: []v1.ContainerStatus{{State: waiting("ErrImagePull")}}}),
			"[init-waiting 0/1 Init:ErrImagePull 0 <unknown>]"},
		{pod("crash", 1, 0, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{RestartCount: 5, State: waiting("CrashLoopBackOff"), LastTerminationState: lastTerminated(40 * time.Second)}}}),
			"[crash 0/1 CrashLoopBackOff 5 (40s ago) <unknown>]"},
		{pod("completed", 1, 0, v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{State: terminated("Completed", 0)}}}),
			"[completed 0/1 Completed 0 <unknown>]"},
		{pod("signal", 1, 0, v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Signal: 9, ExitCode: 137}}}}}),
			"[signal 0/1 Signal:9 0 <unknown>]"},
		{sidecar, "[sidecar 2/2 Running 1 (60s ago) <unknown>]"},
		{terminating, "[terminating 1/1 Terminating 0 <unknown>]"},
		{aged, "[aged 0/1 ContainerCreating 0 3h]"},
	}
	for _, tc := range tests {
		row := podRow(tc.pod, now)
		if got := fmt.Sprint(row.Cells[:5]); got != tc.want {
			t.Errorf("%s: cells %s, want %s", tc.pod.Name, got, tc.want)
		}
		if len(row.Cells) != len(podColumns) {
			t.Errorf("%s: %d cells for %d columns", tc.pod.Name, len(row.Cells), len(podColumns))
		}
	}
	if c := podRow(pod("done", 1, 0, v1.PodStatus{Phase: v1.PodSucceeded}), now).Conditions; len(c) != 1 || c[0].Type != metav1.RowCompleted {
		t.Errorf("a succeeded pod's row conditions = %v", c)
	}
}

func TestPodRowWideColumns(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{NodeName: "n", Containers: []v1.Container{{}},
		ReadinessGates: []v1.PodReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}}},
		Status: v1.PodStatus{PodIPs: []v1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}, Conditions: []v1.PodCondition{{Type: "a", Status: v1.ConditionTrue}}}}
	if got := fmt.Sprint(podRow(p, time.Now()).Cells[5:]); got != "[10.0.0.1 n <none> 1/2]" {
		t.Errorf("wide cells = %s", got)
	}
}

func TestNodeRow(t *testing.T) {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}},
		Spec:       v1.NodeSpec{Unschedulable: true},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse}, {Type: v1.NodeReady, Status: v1.ConditionFalse}},
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.2"}, {Type: v1.NodeHostName, Address: "n1"}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v1.36.3", KernelVersion: "6.1", Architecture: "amd64", ContainerRuntimeVersion: "containerd://1.6"},
		},
	}
	want := "[n1 NotReady,SchedulingDisabled control-plane,edge <unknown> v1.36.3 192.0.2.2 <none> <unknown> 6.1 (amd64) containerd://1.6]"
	if got := fmt.Sprint(nodeRow(n, time.Now()).Cells); got != want {
		t.Errorf("node cells = %s\nwant %s", got, want)
	}
}

func TestObjectRows(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-90 * time.Minute))
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: created}, Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {1}}}
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: created}, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"k": nil}}
	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: v1.ObjectReference{Kind: "Node"}, Reason: "R", Type: "Warning",
		Message: " m \n", FirstTimestamp: created, ReportingController: "kubelet"}
	for _, tc := range []struct {
		obj  runtime.Object
		want string
	}{
		{cm, "[c 2 90m]"},
		{s, "[s Opaque 1 90m]"},
		{ev, "[90m Warning R node  kubelet m 90m 1 e]"},
	} {
		row, err := tableRow(tc.obj, now)
		if err != nil || fmt.Sprint(row.Cells) != tc.want {
			t.Errorf("%T cells = %v (%v), want %s", tc.obj, row.Cells, err, tc.want)
		}
	}
}
