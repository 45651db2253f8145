package streaming

import v1 "k8s.io/api/core/v1"

// fakePods is a pod manager holding a fixed set of pods.
type fakePods map[string]*v1.Pod

func (f fakePods) GetByFullName(namespace, name string) (*v1.Pod, bool) {
	p, ok := f[namespace+"/"+name]
	return p, ok
}

func newFakePods(pods ...*v1.Pod) fakePods {
	f := fakePods{}
	for _, p := range pods {
		f[p.Namespace+"/"+p.Name] = p
	}
	return f
}
