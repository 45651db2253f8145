package allocation

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Of is the record of pod as its spec stands: the resources of each init
// and app container (all resizable in place, as upstream's
// IsResizableContainer with InPlacePodVerticalScalingInitContainers, beta
// and on in v1.36; ephemeral containers have none) and the pod-level ones.
func Of(pod *v1.Pod) PodResources {
	pr := PodResources{ContainerResources: map[string]v1.ResourceRequirements{}}
	if pod.Spec.Resources != nil {
		pr.PodLevelResources = pod.Spec.Resources.DeepCopy()
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		pr.ContainerResources[c.Name] = *c.Resources.DeepCopy()
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		pr.ContainerResources[c.Name] = *c.Resources.DeepCopy()
	}
	return pr
}

// Apply returns pod with the recorded resources in place of its spec's
// (what it runs with), and whether anything differed; pod is copied only
// then. It is pure (upstream's updatePodFromAllocation).
func Apply(pod *v1.Pod, pr PodResources) (*v1.Pod, bool) {
	if pod == nil {
		return nil, false
	}
	out, copied := pod, false
	cp := func() {
		if !copied {
			out, copied = pod.DeepCopy(), true
		}
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec.Resources, pr.PodLevelResources) {
		cp()
		out.Spec.Resources = pr.PodLevelResources.DeepCopy()
	}
	for _, list := range []struct {
		get func(p *v1.Pod) []v1.Container
	}{{func(p *v1.Pod) []v1.Container { return p.Spec.InitContainers }}, {func(p *v1.Pod) []v1.Container { return p.Spec.Containers }}} {
		for i, c := range list.get(pod) {
			a, ok := pr.ContainerResources[c.Name]
			if !ok || apiequality.Semantic.DeepEqual(c.Resources, a) {
				continue
			}
			cp()
			list.get(out)[i].Resources = *a.DeepCopy()
		}
	}
	return out, copied
}

// Operation names a change of one resource value, as the
// kubelet_container_requested_resizes_total "operation" label spells it.
func Operation(newQ, oldQ *resource.Quantity) string {
	switch {
	case newQ.IsZero() && oldQ.IsZero():
		return ""
	case oldQ.IsZero():
		return "add"
	case newQ.IsZero():
		return "remove"
	}
	switch newQ.Cmp(*oldQ) {
	case 1:
		return "increase"
	case -1:
		return "decrease"
	}
	return ""
}

// RequestedChange is one container resource a resize changes.
type RequestedChange struct {
	Resource, Requirement, Operation string
}

// ResizeRequested lists what changed between two versions of a pod's spec
// resources (upstream's recordResizeOperations): per container (init and
// app) memory and CPU requests and limits, and whether the pod-level ones
// changed. It is pure.
func ResizeRequested(oldPod, newPod *v1.Pod) (changes []RequestedChange, any bool) {
	if oldPod == nil || newPod == nil {
		return nil, false
	}
	old := Of(oldPod)
	for name, nr := range Of(newPod).ContainerResources {
		or, ok := old.ContainerResources[name]
		if !ok {
			continue
		}
		for _, c := range []struct {
			res, req string
			n, o     *resource.Quantity
		}{
			{"memory", "requests", nr.Requests.Memory(), or.Requests.Memory()},
			{"memory", "limits", nr.Limits.Memory(), or.Limits.Memory()},
			{"cpu", "requests", nr.Requests.Cpu(), or.Requests.Cpu()},
			{"cpu", "limits", nr.Limits.Cpu(), or.Limits.Cpu()},
		} {
			if op := Operation(c.n, c.o); op != "" {
				changes = append(changes, RequestedChange{Resource: c.res, Requirement: c.req, Operation: op})
			}
		}
	}
	podLevel := !apiequality.Semantic.DeepEqual(oldPod.Spec.Resources, newPod.Spec.Resources)
	return changes, len(changes) > 0 || podLevel
}

// InfeasibleSwap is upstream's message for a memory resize of a container
// that has swap.
const InfeasibleSwap = "In-place resize of containers with swap is not supported."

// Infeasible says why a resize of pod (from allocated to desired) can never
// be done on this node, or "" when it can (upstream's podResizesAdmitHandler).
// limitedSwap reports whether a container gets swap (LimitedSwap on
// cgroup v2); a memory request change of such a container without a
// RestartContainer policy for memory is infeasible. It is pure.
func Infeasible(desired, allocated *v1.Pod, limitedSwap func(pod *v1.Pod, c *v1.Container) bool) string {
	if limitedSwap == nil {
		return ""
	}
	alloc := map[string]*v1.Container{}
	for _, list := range [][]v1.Container{allocated.Spec.Containers, allocated.Spec.InitContainers} {
		for i := range list {
			alloc[list[i].Name] = &list[i]
		}
	}
	for _, list := range [][]v1.Container{desired.Spec.Containers, desired.Spec.InitContainers} {
		for i := range list {
			d := &list[i]
			a, ok := alloc[d.Name]
			if !ok || d.Resources.Requests.Memory().Equal(*a.Resources.Requests.Memory()) || restartsFor(a, v1.ResourceMemory) {
				continue
			}
			if limitedSwap(desired, d) || limitedSwap(allocated, a) {
				return InfeasibleSwap
			}
		}
	}
	return ""
}

func restartsFor(c *v1.Container, r v1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == r {
			return p.RestartPolicy == v1.RestartContainer
		}
	}
	return false
}

type containerAllocation struct {
	Name      string                  `json:"name"`
	Resources v1.ResourceRequirements `json:"resources,omitempty"`
}

type resourceSummary struct {
	InitContainers []containerAllocation `json:"initContainers,omitempty"`
	Containers     []containerAllocation `json:"containers,omitempty"`
	Generation     int64                 `json:"generation"`
	Error          string                `json:"error,omitempty"`
}

// Message is upstream's resize event message: prefix, then the pod's
// container resources, generation and error as JSON ("Pod resize
// completed: {...}").
func Message(pod *v1.Pod, generation int64, errorMsg, prefix string) string {
	s := resourceSummary{Generation: generation, Error: errorMsg}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s.InitContainers = append(s.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s.Containers = append(s.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return prefix
	}
	return fmt.Sprintf("%s: %s", prefix, raw)
}
