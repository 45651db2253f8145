package logs

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestChooseContainer(t *testing.T) {
	term := func(id string) *v1.ContainerStateTerminated { return &v1.ContainerStateTerminated{ContainerID: id} }
	tests := []struct {
		name     string
		status   *v1.ContainerStatus
		previous bool
		want     string
		wantErr  string
	}{
		{name: "no status", wantErr: `container "c" in pod "p" is not available`},
		{name: "running", status: &v1.ContainerStatus{ContainerID: "containerd://r", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}, want: "containerd://r"},
		{name: "running, previous", status: &v1.ContainerStatus{ContainerID: "containerd://r", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, LastTerminationState: v1.ContainerState{Terminated: term("containerd://old")}}, previous: true, want: "containerd://old"},
		{name: "previous without ID", status: &v1.ContainerStatus{LastTerminationState: v1.ContainerState{Terminated: term("")}}, previous: true, wantErr: `previous terminated container "c" in pod "p" not found`},
		{name: "terminated", status: &v1.ContainerStatus{State: v1.ContainerState{Terminated: term("containerd://t")}}, want: "containerd://t"},
		{name: "terminated without ID falls back to the last", status: &v1.ContainerStatus{State: v1.ContainerState{Terminated: term("")}, LastTerminationState: v1.ContainerState{Terminated: term("containerd://l")}}, want: "containerd://l"},
		{name: "terminated without any ID", status: &v1.ContainerStatus{State: v1.ContainerState{Terminated: term("")}}, wantErr: `container "c" in pod "p" is terminated`},
		{name: "waiting after a termination", status: &v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: v1.ContainerState{Terminated: term("containerd://l")}}, want: "containerd://l"},
		{name: "last termination without ID", status: &v1.ContainerStatus{LastTerminationState: v1.ContainerState{Terminated: term("")}}, wantErr: `container "c" in pod "p" is terminated`},
		{name: "image pull back-off", status: &v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}, wantErr: `container "c" in pod "p" is waiting to start: trying and failing to pull image`},
		{name: "other waiting reason", status: &v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}}, wantErr: `container "c" in pod "p" is waiting to start: CreateContainerConfigError`},
		{name: "no state at all", status: &v1.ContainerStatus{}, wantErr: `container "c" in pod "p" is waiting to start - no logs yet`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseContainer("p", tc.status, "c", tc.previous)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestWaitingReasonFromTheRuntime checks the reason a never-run container
// waits with, from its init containers' instances.
func TestWaitingReasonFromTheRuntime(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	type inst struct {
		name  string
		state runtimeapi.ContainerState
		exit  int32
	}
	tests := []struct {
		name      string
		sidecar   bool
		instances []inst
		container string
		want      string
	}{
		{name: "no init container has run", container: "main", want: reasonPodInitializing},
		{name: "init container running", instances: []inst{{"init", running, 0}}, container: "main", want: reasonPodInitializing},
		{name: "init container failed", instances: []inst{{"init", exited, 1}}, container: "main", want: reasonPodInitializing},
		{name: "init container succeeded", instances: []inst{{"init", exited, 0}}, container: "main", want: reasonContainerCreating},
		{name: "sidecar running", sidecar: true, instances: []inst{{"init", running, 0}}, container: "main", want: reasonContainerCreating},
		{name: "sidecar exited", sidecar: true, instances: []inst{{"init", exited, 0}}, container: "main", want: reasonPodInitializing},
		{name: "an init container itself", container: "init", want: reasonContainerCreating},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("ns", "p", "uid", v1.RestartPolicyAlways, "main")
			pod.Spec.InitContainers = []v1.Container{{Name: "init"}}
			if tc.sidecar {
				pod.Spec.InitContainers[0].RestartPolicy = &always
			}
			rt := newFakeRuntime()
			for i, in := range tc.instances {
				rt.add("uid", in.name, in.name+string(rune('a'+i)), uint32(i), int64(i), in.state, in.exit, "")
			}
			h := &containerLogs{cfg: Config{Runtime: rt}.withDefaults()}
			spec, kind, _ := specContainer(pod, tc.container)
			st, err := h.runtimeStatus(t.Context(), pod, spec, kind)
			if err != nil {
				t.Fatal(err)
			}
			if st.State.Waiting == nil || st.State.Waiting.Reason != tc.want {
				t.Errorf("state %+v, want waiting %s", st.State, tc.want)
			}
		})
	}
}
