package criconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Identity labels, set on sandboxes and containers (same keys as upstream).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// Container annotations (same keys and value formats as upstream).
const (
	AnnotationContainerHash             = "io.kubernetes.container.hash"         // hex
	AnnotationContainerRestartCount     = "io.kubernetes.container.restartCount" // decimal
	AnnotationTerminationMessagePath    = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy  = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodDeletionGracePeriod    = "io.kubernetes.pod.deletionGracePeriod"    // decimal seconds
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod" // decimal seconds
	AnnotationContainerPreStopHandler   = "io.kubernetes.container.preStopHandler"   // JSON v1.LifecycleHandler
	AnnotationContainerPorts            = "io.kubernetes.container.ports"            // JSON []v1.ContainerPort
	AnnotationContainerType             = "io.kubernetes.container.type"
	ContainerTypeInit                   = "init"
	ContainerTypeRegular                = "container"
	ContainerTypeEphemeral              = "ephemeral"
)

// ErrNotManaged says labels lack the identity the kubelet puts on what it creates.
var ErrNotManaged = errors.New("not created by a kubelet: identity labels missing")

// SandboxMeta is the pod identity read back from a sandbox's labels.
type SandboxMeta struct {
	PodName, PodNamespace string
	PodUID                types.UID
}

// ContainerMeta is what a container's labels and annotations say about it.
type ContainerMeta struct {
	PodName, PodNamespace     string
	PodUID                    types.UID
	ContainerName             string
	Hash                      uint64
	RestartCount              int
	TerminationMessagePath    string
	TerminationMessagePolicy  v1.TerminationMessagePolicy
	PodTerminationGracePeriod *int64
	PodDeletionGracePeriod    *int64
	// PreStopHandler and Ports let a kubelet stop a container whose pod spec
	// it no longer has.
	PreStopHandler *v1.LifecycleHandler
	Ports          []v1.ContainerPort
	// ContainerType is ContainerTypeInit, ContainerTypeRegular,
	// ContainerTypeEphemeral, or "" when unknown.
	ContainerType string
}

// SandboxLabels are the pod's labels plus the identity labels.
func SandboxLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	maps.Copy(labels, pod.Labels)
	labels[LabelPodName] = pod.Name
	labels[LabelPodNamespace] = pod.Namespace
	labels[LabelPodUID] = string(pod.UID)
	return labels
}

// ContainerLabels are the identity labels of container c of pod.
func ContainerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
	}
}

// ContainerAnnotations are the kubelet's annotations for container c of pod,
// on top of extra (device plugin annotations), which they override.
func ContainerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int, extra map[string]string) (map[string]string, error) {
	a := make(map[string]string, len(extra)+9)
	maps.Copy(a, extra)
	a[AnnotationContainerHash] = strconv.FormatUint(ContainerHash(c), 16)
	a[AnnotationContainerRestartCount] = strconv.Itoa(restartCount)
	a[AnnotationTerminationMessagePath] = c.TerminationMessagePath
	a[AnnotationTerminationMessagePolicy] = string(c.TerminationMessagePolicy)
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		raw, err := json.Marshal(c.Lifecycle.PreStop)
		if err != nil {
			return nil, fmt.Errorf("encode preStop handler of container %q: %w", c.Name, err)
		}
		a[AnnotationContainerPreStopHandler] = string(raw)
	}
	if len(c.Ports) > 0 {
		raw, err := json.Marshal(c.Ports)
		if err != nil {
			return nil, fmt.Errorf("encode ports of container %q: %w", c.Name, err)
		}
		a[AnnotationContainerPorts] = string(raw)
	}
	if t := containerType(pod, c.Name); t != "" {
		a[AnnotationContainerType] = t
	}
	return a, nil
}

// IsEphemeral reports whether name is one of pod's ephemeral containers.
func IsEphemeral(pod *v1.Pod, name string) bool {
	return containerType(pod, name) == ContainerTypeEphemeral
}

func containerType(pod *v1.Pod, name string) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return ContainerTypeInit
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return ContainerTypeRegular
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return ContainerTypeEphemeral
		}
	}
	return ""
}

// SandboxMetaFromLabels reads the pod identity back from sandbox labels.
func SandboxMetaFromLabels(labels map[string]string) (SandboxMeta, error) {
	m := SandboxMeta{
		PodName:      labels[LabelPodName],
		PodNamespace: labels[LabelPodNamespace],
		PodUID:       types.UID(labels[LabelPodUID]),
	}
	if m.PodName == "" || m.PodNamespace == "" || m.PodUID == "" {
		return m, fmt.Errorf("sandbox labels %v: %w", labels, ErrNotManaged)
	}
	return m, nil
}

// ContainerMetaFrom reads a container's identity and kubelet annotations
// back. Identity labels are required; like upstream, a malformed or missing
// annotation only leaves its field zero, so old containers stay manageable.
func ContainerMetaFrom(labels, annotations map[string]string) (ContainerMeta, error) {
	m := ContainerMeta{
		PodName:                  labels[LabelPodName],
		PodNamespace:             labels[LabelPodNamespace],
		PodUID:                   types.UID(labels[LabelPodUID]),
		ContainerName:            labels[LabelContainerName],
		TerminationMessagePath:   annotations[AnnotationTerminationMessagePath],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(annotations[AnnotationTerminationMessagePolicy]),
		ContainerType:            annotations[AnnotationContainerType],
	}
	if m.PodName == "" || m.PodNamespace == "" || m.PodUID == "" || m.ContainerName == "" {
		return m, fmt.Errorf("container labels %v: %w", labels, ErrNotManaged)
	}
	if s, ok := annotations[AnnotationContainerHash]; ok {
		m.Hash, _ = strconv.ParseUint(s, 16, 64)
	}
	if s, ok := annotations[AnnotationContainerRestartCount]; ok {
		m.RestartCount, _ = strconv.Atoi(s)
	}
	m.PodTerminationGracePeriod = int64Annotation(annotations, AnnotationPodTerminationGracePeriod)
	m.PodDeletionGracePeriod = int64Annotation(annotations, AnnotationPodDeletionGracePeriod)
	if s, ok := annotations[AnnotationContainerPreStopHandler]; ok {
		h := &v1.LifecycleHandler{}
		if json.Unmarshal([]byte(s), h) == nil {
			m.PreStopHandler = h
		}
	}
	if s, ok := annotations[AnnotationContainerPorts]; ok {
		var ports []v1.ContainerPort
		if json.Unmarshal([]byte(s), &ports) == nil {
			m.Ports = ports
		}
	}
	return m, nil
}

func int64Annotation(annotations map[string]string, key string) *int64 {
	s, ok := annotations[key]
	if !ok {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	return &v
}
