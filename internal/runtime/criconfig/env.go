package criconfig

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// envList keeps variables in the order they were first defined; a later
// definition replaces the value in place.
type envList struct {
	names  []string
	values map[string]string
}

func (l *envList) set(name, value string) {
	if _, ok := l.values[name]; !ok {
		l.names = append(l.names, name)
	}
	l.values[name] = value
}

// envRefs caches the config maps and secrets one container reads.
type envRefs struct {
	src        EnvSource
	namespace  string
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

// configMap returns the named config map, or nil (and no error) when it is
// missing and optional.
func (r *envRefs) configMap(ctx context.Context, name string, optional bool) (*v1.ConfigMap, error) {
	if cm, ok := r.configMaps[name]; ok {
		return cm, nil
	}
	if r.src == nil {
		return nil, fmt.Errorf("couldn't get configMap %s/%s, no API server connection", r.namespace, name)
	}
	cm, err := r.src.ConfigMap(ctx, r.namespace, name)
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	r.configMaps[name] = cm
	return cm, nil
}

func (r *envRefs) secret(ctx context.Context, name string, optional bool) (*v1.Secret, error) {
	if s, ok := r.secrets[name]; ok {
		return s, nil
	}
	if r.src == nil {
		return nil, fmt.Errorf("couldn't get secret %s/%s, no API server connection", r.namespace, name)
	}
	s, err := r.src.Secret(ctx, r.namespace, name)
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	r.secrets[name] = s
	return s, nil
}

// containerEnv builds the container's environment: envFrom sources first
// (keys sorted within a source), then env in declaration order (a literal
// value expands $(VAR) against what is defined so far and the service
// variables), then service variables not otherwise set, sorted.
func (o *Options) containerEnv(ctx context.Context, in *ContainerInputs) ([]*runtimeapi.KeyValue, map[string]string, error) {
	pod, c := in.Pod, in.Container
	var serviceEnv map[string]string
	if o.EnvSource != nil {
		links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
		var err error
		if serviceEnv, err = o.EnvSource.ServiceEnv(ctx, pod.Namespace, links); err != nil {
			// A static pod must start without the API server (it may be
			// the API server): upstream reads services from its informer
			// and never waits for it to sync for static pods.
			if !podutil.IsStaticPod(pod) {
				return nil, nil, fmt.Errorf("service environment variables: %w", err)
			}
			klog.V(2).InfoS("Starting static pod without service environment variables", "pod", klog.KObj(pod), "container", c.Name, "err", err)
			serviceEnv = nil
		}
	}
	refs := &envRefs{src: o.EnvSource, namespace: pod.Namespace, configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	env := &envList{values: map[string]string{}}

	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			ref := from.ConfigMapRef
			cm, err := refs.configMap(ctx, ref.Name, ref.Optional != nil && *ref.Optional)
			if err != nil {
				return nil, nil, err
			}
			if cm != nil {
				for _, k := range sortedKeys(cm.Data) {
					env.set(from.Prefix+k, cm.Data[k])
				}
			}
		case from.SecretRef != nil:
			ref := from.SecretRef
			s, err := refs.secret(ctx, ref.Name, ref.Optional != nil && *ref.Optional)
			if err != nil {
				return nil, nil, err
			}
			if s != nil {
				for _, k := range sortedKeys(s.Data) {
					env.set(from.Prefix+k, string(s.Data[k]))
				}
			}
		}
	}

	lookup := podutil.MappingFuncFor(env.values, serviceEnv)
	for i := range c.Env {
		e := &c.Env[i]
		if e.Value != "" || e.ValueFrom == nil {
			env.set(e.Name, podutil.Expand(e.Value, lookup))
			continue
		}
		v, ok, err := o.envValueFrom(ctx, in, refs, e.ValueFrom)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			env.set(e.Name, v)
		}
	}

	out := make([]*runtimeapi.KeyValue, 0, len(env.names)+len(serviceEnv))
	all := make(map[string]string, len(env.names)+len(serviceEnv))
	for _, n := range env.names {
		out = append(out, &runtimeapi.KeyValue{Key: n, Value: []byte(env.values[n])})
		all[n] = env.values[n]
	}
	for _, n := range sortedKeys(serviceEnv) {
		if _, ok := env.values[n]; !ok {
			out = append(out, &runtimeapi.KeyValue{Key: n, Value: []byte(serviceEnv[n])})
			all[n] = serviceEnv[n]
		}
	}
	return out, all, nil
}

// envValueFrom resolves one valueFrom; ok is false when an optional source
// or key is missing and the variable is left out.
func (o *Options) envValueFrom(ctx context.Context, in *ContainerInputs, refs *envRefs, from *v1.EnvVarSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := o.fieldRefValue(in, from.FieldRef)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := o.resourceFieldRefValue(in.Pod, in.Container, from.ResourceFieldRef)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := refs.configMap(ctx, ref.Name, optional)
		if err != nil || cm == nil {
			return "", false, err
		}
		v, ok := cm.Data[ref.Key]
		if !ok && !optional {
			return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, in.Pod.Namespace, ref.Name)
		}
		return v, ok, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := refs.secret(ctx, ref.Name, optional)
		if err != nil || s == nil {
			return "", false, err
		}
		v, ok := s.Data[ref.Key]
		if !ok && !optional {
			return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, in.Pod.Namespace, ref.Name)
		}
		return string(v), ok, nil
	case from.FileKeyRef != nil:
		return "", false, fmt.Errorf("fileKeyRef is not supported by this kubelet")
	}
	return "", true, nil
}

// fieldRefValue resolves a downward API field path for an env variable.
func (o *Options) fieldRefValue(in *ContainerInputs, ref *v1.ObjectFieldSelector) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("unsupported fieldRef apiVersion %q", ref.APIVersion)
	}
	pod := in.Pod
	path := ref.FieldPath
	if v, ok, err := MetadataFieldValue(pod, path); ok || err != nil {
		return v, err
	}
	podIPs := orderIPs(in.PodIPs, o.hostIPs(in))
	switch path {
	case "spec.nodeName":
		return orDefault(pod.Spec.NodeName, o.NodeName), nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "spec.schedulerName":
		return pod.Spec.SchedulerName, nil
	case "spec.restartPolicy":
		return string(pod.Spec.RestartPolicy), nil
	case "spec.terminationGracePeriodSeconds":
		if pod.Spec.TerminationGracePeriodSeconds == nil {
			return strconv.Itoa(int(v1.DefaultTerminationGracePeriodSeconds)), nil
		}
		return strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10), nil
	case "status.phase":
		return string(pod.Status.Phase), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		hostIPs := o.hostIPs(in)
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("%s: the node's IP addresses are not known", path)
		}
		if path == "status.hostIP" {
			return hostIPs[0], nil
		}
		return strings.Join(hostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldRef path %q", path)
}

func (o *Options) hostIPs(in *ContainerInputs) []string {
	if len(in.HostIPs) > 0 {
		return in.HostIPs
	}
	return o.HostIPs
}

// MetadataFieldValue resolves the downward API's metadata field paths
// (name, namespace, uid, labels, annotations and their ['key'] forms), as
// env variables and downwardAPI volumes show them. ok is false for any
// other path, which callers resolve themselves or refuse.
func MetadataFieldValue(pod *v1.Pod, path string) (value string, ok bool, err error) {
	if inner, key, sub := subscript(path); sub {
		switch inner {
		case "metadata.labels":
			return pod.Labels[key], true, nil
		case "metadata.annotations":
			return pod.Annotations[key], true, nil
		}
		return "", false, fmt.Errorf("unsupported fieldRef path %q", path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, true, nil
	case "metadata.namespace":
		return pod.Namespace, true, nil
	case "metadata.uid":
		return string(pod.UID), true, nil
	case "metadata.labels":
		return formatMap(pod.Labels), true, nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), true, nil
	}
	return "", false, nil
}

// subscript splits "metadata.labels['key']" into its map path and key.
func subscript(path string) (string, string, bool) {
	open := strings.Index(path, "['")
	if open < 0 || !strings.HasSuffix(path, "']") || open+2 > len(path)-2 {
		return "", "", false
	}
	return path[:open], path[open+2 : len(path)-2], true
}

// formatMap renders a label or annotation map as sorted key="value" lines.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// orderIPs puts the first pod IP of the node's preferred family first and
// the first of the other family second, as status.podIPs is ordered.
func orderIPs(podIPs, hostIPs []string) []string {
	preferV6 := false
	if len(hostIPs) > 0 {
		if a, err := netip.ParseAddr(hostIPs[0]); err == nil && a.Is6() && !a.Is4In6() {
			preferV6 = true
		}
	}
	var first, second string
	for _, ip := range podIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		isV6 := a.Is6() && !a.Is4In6()
		if isV6 == preferV6 && first == "" {
			first = ip
		} else if isV6 != preferV6 && second == "" {
			second = ip
		}
	}
	var out []string
	for _, ip := range []string{first, second} {
		if ip != "" {
			out = append(out, ip)
		}
	}
	return out
}

// ResourceFieldValue resolves a resourceFieldRef that names its container
// (the downward API volume form); see resourceFieldRefValue.
func (o *Options) ResourceFieldValue(pod *v1.Pod, ref *v1.ResourceFieldSelector) (string, error) {
	c := FindContainer(pod, ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: no container named %q", ref.ContainerName)
	}
	return o.resourceFieldRefValue(pod, c, ref)
}

// resourceFieldRefValue resolves limits.* or requests.* of a container, a
// missing cpu, memory or ephemeral-storage limit reading as the pod-level
// limit or else the node's allocatable, divided by the divisor and rounded
// up.
func (o *Options) resourceFieldRefValue(pod *v1.Pod, self *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	c := self
	if ref.ContainerName != "" && ref.ContainerName != self.Name {
		if c = FindContainer(pod, ref.ContainerName); c == nil {
			return "", fmt.Errorf("resourceFieldRef: no container named %q", ref.ContainerName)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource %q", ref.Resource)
	}
	rn := v1.ResourceName(name)
	if rn != v1.ResourceCPU && rn != v1.ResourceMemory && rn != v1.ResourceEphemeralStorage && !strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
		return "", fmt.Errorf("unsupported container resource %q", ref.Resource)
	}
	var q resource.Quantity
	if kind == "requests" {
		q = c.Resources.Requests[rn]
	} else {
		q = o.defaultedLimit(pod, c, rn)
	}
	if rn == v1.ResourceCPU {
		d := divisor.MilliValue()
		if d <= 0 {
			return "", fmt.Errorf("resourceFieldRef divisor %s is too small for cpu", divisor.String())
		}
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(d))), 10), nil
	}
	d := divisor.Value()
	if d <= 0 {
		return "", fmt.Errorf("resourceFieldRef divisor %s is too small for %s", divisor.String(), name)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(d))), 10), nil
}

func (o *Options) defaultedLimit(pod *v1.Pod, c *v1.Container, rn v1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Limits[rn]; ok && !q.IsZero() {
		return q
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if q, ok := pod.Spec.Resources.Limits[rn]; ok && !q.IsZero() {
			return q
		}
	}
	if o.NodeAllocatable != nil {
		if q, ok := o.NodeAllocatable()[rn]; ok {
			return q
		}
	}
	switch rn {
	case v1.ResourceCPU:
		return *resource.NewMilliQuantity(o.MachineCPUMilli, resource.DecimalSI)
	case v1.ResourceMemory:
		return *resource.NewQuantity(o.MachineMemoryBytes, resource.BinarySI)
	case v1.ResourceEphemeralStorage:
		return *resource.NewQuantity(o.MachineEphemeralStorageBytes, resource.BinarySI)
	}
	return resource.Quantity{}
}

// FindContainer finds an app or init container of pod by name (nil if none).
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
