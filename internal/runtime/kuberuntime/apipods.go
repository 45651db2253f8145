package kuberuntime

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ToAPIPod is the pod as /runningpods/ shows it, as upstream's
// kubecontainer.Pod.ToAPIPod: identity and containers (name, image), no
// spec from a source. Pure.
func (p *RunningPod) ToAPIPod() v1.Pod {
	out := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}}
	for _, c := range p.Containers {
		out.Spec.Containers = append(out.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
	}
	return out
}

// RunningAPIPods lists the pods with a running container as API pods.
func (m *Manager) RunningAPIPods(ctx context.Context) ([]v1.Pod, error) {
	pods, err := m.GetPods(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]v1.Pod, 0, len(pods))
	for _, rp := range pods {
		out = append(out, rp.ToAPIPod())
	}
	return out, nil
}
