package kuberuntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestToAPIPod(t *testing.T) {
	rp := &RunningPod{UID: "u", Name: "web", Namespace: "ns", Containers: []*ContainerStatus{
		{Name: "app", Image: "busybox:1", ImageRef: "sha256:x", State: StateRunning},
		{Name: "side", Image: "pause:3"},
	}}
	want := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1"}, {Name: "side", Image: "pause:3"}}}}
	if got := rp.ToAPIPod(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ToAPIPod = %+v, want %+v", got, want)
	}
}
