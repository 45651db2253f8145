package sources

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waitTimeout bounds every wait on a channel in these tests.
const waitTimeout = 10 * time.Second

// testPod returns a minimal pod with the given UID and name.
func testPod(uid, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

// withPod copies p and applies mutate to the copy.
func withPod(p *v1.Pod, mutate func(*v1.Pod)) *v1.Pod {
	c := p.DeepCopy()
	mutate(c)
	return c
}

func byUID(pods ...*v1.Pod) map[types.UID]*v1.Pod {
	m := map[types.UID]*v1.Pod{}
	for _, p := range pods {
		m[p.UID] = p
	}
	return m
}

func uidsOf(pods []*v1.Pod) []types.UID {
	out := []types.UID{}
	for _, p := range pods {
		out = append(out, p.UID)
	}
	return out
}

func namesOf(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// recvUpdate waits for the next PodUpdate.
func recvUpdate(t *testing.T, ch <-chan PodUpdate) PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(waitTimeout):
		t.Fatalf("no PodUpdate within %v", waitTimeout)
		return PodUpdate{}
	}
}

// expectNoUpdate fails if an update is already queued.
func expectNoUpdate(t *testing.T, ch <-chan PodUpdate) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %v %v from %q", u.Op, namesOf(u.Pods), u.Source)
	default:
	}
}

// recvSnapshot waits for the next snapshot from a source.
func recvSnapshot(t *testing.T, ch <-chan []*v1.Pod) []*v1.Pod {
	t.Helper()
	select {
	case pods := <-ch:
		return pods
	case <-time.After(waitTimeout):
		t.Fatalf("no snapshot within %v", waitTimeout)
		return nil
	}
}
