package kuberuntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// App containers stop first, all at once; sidecars after them, the last
// declared first; exited containers are left alone.
func TestSplitForKill(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "proxy", RestartPolicy: &always}, {Name: "logger", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}, {Name: "web"}},
	}}
	st := &PodStatus{Containers: []*ContainerStatus{
		{Name: "proxy", State: StateRunning},
		{Name: "app", State: StateRunning},
		{Name: "init", State: StateExited},
		{Name: "logger", State: StateRunning},
		{Name: "web", State: StateCreated},
	}}
	names := func(cs []*ContainerStatus) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	first, sidecars := splitForKill(pod, st)
	if got := names(first); !reflect.DeepEqual(got, []string{"app", "web"}) {
		t.Errorf("stopped first: %v, want [app web]", got)
	}
	if got := names(sidecars); !reflect.DeepEqual(got, []string{"logger", "proxy"}) {
		t.Errorf("sidecars: %v, want [logger proxy] (reverse spec order)", got)
	}
	// Without a spec nothing is a sidecar.
	first, sidecars = splitForKill(nil, st)
	if len(first) != 4 || len(sidecars) != 0 {
		t.Errorf("no spec: first %v sidecars %v", names(first), names(sidecars))
	}
}
