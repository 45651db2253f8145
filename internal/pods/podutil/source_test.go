package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(annotations map[string]string, priority *int32, class string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: annotations},
		Spec:       v1.PodSpec{Priority: priority, PriorityClassName: class},
	}
}

func ptrTo[T any](v T) *T { return &v }

// The cases follow upstream's pkg/kubelet/types pod_update_test.go.
func TestPodSourceAndCriticality(t *testing.T) {
	const highestUser = int32(1_000_000_000) // HighestUserDefinablePriority
	cases := []struct {
		name                                   string
		pod                                    *v1.Pod
		static, mirror, critical, nodeCritical bool
	}{
		{name: "no annotations", pod: testPod(nil, nil, "")},
		{name: "file source", pod: testPod(map[string]string{ConfigSourceAnnotationKey: "file"}, nil, ""), static: true, critical: true},
		{name: "http source", pod: testPod(map[string]string{ConfigSourceAnnotationKey: "http"}, nil, ""), static: true, critical: true},
		{name: "empty source is static", pod: testPod(map[string]string{ConfigSourceAnnotationKey: ""}, nil, ""), static: true, critical: true},
		{name: "api source", pod: testPod(map[string]string{ConfigSourceAnnotationKey: ApiserverSource}, nil, "")},
		{name: "mirror annotation", pod: testPod(map[string]string{ConfigMirrorAnnotationKey: "hash"}, nil, ""), mirror: true, critical: true},
		{name: "system priority", pod: testPod(nil, ptrTo(SystemCriticalPriority), ""), critical: true},
		{name: "above system priority", pod: testPod(nil, ptrTo(SystemCriticalPriority+1000), ""), critical: true},
		{name: "highest user priority", pod: testPod(nil, ptrTo(highestUser), "")},
		{name: "node critical", pod: testPod(nil, ptrTo(SystemCriticalPriority+1000), SystemNodeCritical), critical: true, nodeCritical: true},
		{name: "node critical class without priority", pod: testPod(nil, nil, SystemNodeCritical)},
		{name: "static node critical", pod: testPod(map[string]string{ConfigSourceAnnotationKey: "file"}, nil, SystemNodeCritical), static: true, critical: true, nodeCritical: true},
		{name: "cluster critical class", pod: testPod(nil, ptrTo(SystemCriticalPriority), "system-cluster-critical"), critical: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsStaticPod(tc.pod); got != tc.static {
				t.Errorf("IsStaticPod = %v, want %v", got, tc.static)
			}
			if got := IsMirrorPod(tc.pod); got != tc.mirror {
				t.Errorf("IsMirrorPod = %v, want %v", got, tc.mirror)
			}
			if got := IsCriticalPod(tc.pod); got != tc.critical {
				t.Errorf("IsCriticalPod = %v, want %v", got, tc.critical)
			}
			if got := IsNodeCriticalPod(tc.pod); got != tc.nodeCritical {
				t.Errorf("IsNodeCriticalPod = %v, want %v", got, tc.nodeCritical)
			}
		})
	}
}

func TestRestartableInitContainer(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicy("Never")
	cases := []struct {
		name string
		c    *v1.Container
		want bool
	}{
		{"nil container", nil, false},
		{"no policy", &v1.Container{Name: "a"}, false},
		{"Always", &v1.Container{Name: "a", RestartPolicy: &always}, true},
		{"other policy", &v1.Container{Name: "a", RestartPolicy: &never}, false},
	}
	for _, tc := range cases {
		if got := IsRestartableInitContainer(tc.c); got != tc.want {
			t.Errorf("%s: IsRestartableInitContainer = %v, want %v", tc.name, got, tc.want)
		}
	}
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}}}
	if HasRestartableInitContainer(pod) {
		t.Error("HasRestartableInitContainer without a sidecar = true")
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: "side", RestartPolicy: &always})
	if !HasRestartableInitContainer(pod) {
		t.Error("HasRestartableInitContainer with a sidecar = false")
	}
}

func TestRuntimeContainerIDStripsTheRuntimeName(t *testing.T) {
	for in, want := range map[string]string{"containerd://abc": "abc", "cri-o://x": "x", "bare": "bare"} {
		if got := RuntimeContainerID(in); got != want {
			t.Errorf("RuntimeContainerID(%q) = %q, want %q", in, got, want)
		}
	}
}
