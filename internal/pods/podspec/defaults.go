package podspec

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Values the API server fills in (k8s.io/api/core/v1 names most of them).
const (
	defaultTerminationGracePeriod = int64(v1.DefaultTerminationGracePeriodSeconds)
	defaultTokenExpirationSeconds = int64(3600)

	defaultProbeTimeoutSeconds   = 1
	defaultProbePeriodSeconds    = 10
	defaultProbeSuccessThreshold = 1
	defaultProbeFailureThreshold = 3
	defaultHTTPGetPath           = "/"
	defaultFieldRefAPIVersion    = "v1"
	defaultISCSIInterface        = "default"
	defaultRBDPool               = "rbd"
	defaultRBDUser               = "admin"
	defaultRBDKeyring            = "/etc/ceph/keyring"
	defaultAzureDiskFSType       = "ext4"
	defaultScaleIOStorageMode    = "ThinProvisioned"
	defaultScaleIOFSType         = "xfs"
	defaultVolumeFileMode        = int32(0644)
	defaultEphemeralVolumeMode   = v1.PersistentVolumeFilesystem
)

// setPodDefaults applies the pod-only defaults, in the order the API server
// does: container requests from limits, pod-level resources, service links
// and host-network ports.
func setPodDefaults(pod *v1.Pod) {
	for i := range pod.Spec.Containers {
		requestsFromLimits(&pod.Spec.Containers[i].Resources)
	}
	for i := range pod.Spec.InitContainers {
		requestsFromLimits(&pod.Spec.InitContainers[i].Resources)
	}
	defaultPodLevelResources(&pod.Spec)
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptrTo(v1.DefaultEnableServiceLinks)
	}
	if pod.Spec.HostNetwork {
		hostPortsFromContainerPorts(pod.Spec.Containers)
		hostPortsFromContainerPorts(pod.Spec.InitContainers)
	}
}

// requestsFromLimits copies each limit without a matching request into the
// requests.
func requestsFromLimits(r *v1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = v1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// hostPortsFromContainerPorts gives every port without a hostPort its
// containerPort: with host networking the two are the same port.
func hostPortsFromContainerPorts(containers []v1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

// defaultPodLevelResources fills in spec.resources when it is partly given:
// huge-page limits from the containers, requests from the containers or the
// pod limits, and limits from the containers when every container has one.
func defaultPodLevelResources(spec *v1.PodSpec) {
	defaultPodHugePageLimits(spec)
	defaultPodRequests(spec)
	defaultPodLimits(spec)
}

func defaultPodHugePageLimits(spec *v1.PodSpec) {
	r := spec.Resources
	if r == nil || (len(r.Limits) == 0 && len(r.Requests) == 0) {
		return
	}
	limits := r.Limits
	if limits == nil {
		limits = v1.ResourceList{}
	}
	for name, q := range aggregateLimits(spec) {
		if !podutil.IsHugePageResourceName(name) {
			continue
		}
		if _, requested := r.Requests[name]; requested {
			continue
		}
		if _, ok := limits[name]; !ok {
			limits[name] = q.DeepCopy()
		}
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
}

func defaultPodRequests(spec *v1.PodSpec) {
	r := spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	requests := r.Requests
	if requests == nil {
		requests = v1.ResourceList{}
	}
	for name, q := range aggregateRequests(spec) {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && podutil.IsOvercommitAllowed(name) {
			requests[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = q.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}
}

func defaultPodLimits(spec *v1.PodSpec) {
	r := spec.Resources
	if r == nil || anyPodLevel(r.Limits) || !anyPodLevel(r.Requests) {
		return
	}
	limits := r.Limits
	if limits == nil {
		limits = v1.ResourceList{}
	}
	for name, q := range aggregateLimits(spec) {
		if _, ok := limits[name]; ok || !resourcehelper.IsSupportedPodLevelResource(name) || !podutil.IsOvercommitAllowed(name) {
			continue
		}
		if !everyContainerLimits(spec, name) {
			continue
		}
		limits[name] = q.DeepCopy()
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
}

func anyPodLevel(list v1.ResourceList) bool {
	for name := range list {
		if resourcehelper.IsSupportedPodLevelResource(name) {
			return true
		}
	}
	return false
}

func everyContainerLimits(spec *v1.PodSpec, name v1.ResourceName) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			if _, ok := c.Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}

// setPodSpecDefaults applies the defaults every pod spec gets.
func setPodSpecDefaults(spec *v1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptrTo(defaultTerminationGracePeriod)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
}

// setContainerDefaults defaults one container of any kind.
func setContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		setEnvSourceDefaults(c.Env[i].ValueFrom)
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				setHTTPGetDefaults(h.HTTPGet)
			}
		}
	}
}

func setEnvSourceDefaults(src *v1.EnvVarSource) {
	if src == nil {
		return
	}
	setFieldRefDefaults(src.FieldRef)
	if src.FileKeyRef != nil && src.FileKeyRef.Optional == nil {
		src.FileKeyRef.Optional = ptrTo(false)
	}
}

func setFieldRefDefaults(f *v1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = defaultFieldRefAPIVersion
	}
}

func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = defaultProbeTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = defaultProbePeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = defaultProbeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = defaultProbeFailureThreshold
	}
	setHTTPGetDefaults(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptrTo("")
	}
}

func setHTTPGetDefaults(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = defaultHTTPGetPath
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

// setVolumeDefaults defaults one pod volume; a volume with no source at all
// becomes an emptyDir.
func setVolumeDefaults(vol *v1.Volume) {
	src := &vol.VolumeSource
	if *src == (v1.VolumeSource{}) {
		src.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = defaultPullPolicy(src.Image.Reference)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptrTo(v1.HostPathUnset)
	}
	if src.Secret != nil {
		defaultMode(&src.Secret.DefaultMode)
	}
	if src.ConfigMap != nil {
		defaultMode(&src.ConfigMap.DefaultMode)
	}
	if src.DownwardAPI != nil {
		defaultMode(&src.DownwardAPI.DefaultMode)
		for i := range src.DownwardAPI.Items {
			setFieldRefDefaults(src.DownwardAPI.Items[i].FieldRef)
		}
	}
	if src.Projected != nil {
		setProjectedDefaults(src.Projected)
	}
	setLegacyVolumeDefaults(src)
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		claim := &src.Ephemeral.VolumeClaimTemplate.Spec
		if claim.VolumeMode == nil {
			claim.VolumeMode = ptrTo(defaultEphemeralVolumeMode)
		}
		roundUpToMilli(claim.Resources.Limits)
		roundUpToMilli(claim.Resources.Requests)
	}
}

func setProjectedDefaults(p *v1.ProjectedVolumeSource) {
	defaultMode(&p.DefaultMode)
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.DownwardAPI != nil {
			for j := range s.DownwardAPI.Items {
				setFieldRefDefaults(s.DownwardAPI.Items[j].FieldRef)
			}
		}
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
			s.ServiceAccountToken.ExpirationSeconds = ptrTo(defaultTokenExpirationSeconds)
		}
	}
}

// setLegacyVolumeDefaults covers the in-tree network volume types that still
// carry declared defaults.
func setLegacyVolumeDefaults(src *v1.VolumeSource) {
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = defaultISCSIInterface
	}
	if r := src.RBD; r != nil {
		if r.RBDPool == "" {
			r.RBDPool = defaultRBDPool
		}
		if r.RadosUser == "" {
			r.RadosUser = defaultRBDUser
		}
		if r.Keyring == "" {
			r.Keyring = defaultRBDKeyring
		}
	}
	if a := src.AzureDisk; a != nil {
		if a.CachingMode == nil {
			a.CachingMode = ptrTo(v1.AzureDataDiskCachingReadWrite)
		}
		if a.FSType == nil {
			a.FSType = ptrTo(defaultAzureDiskFSType)
		}
		if a.ReadOnly == nil {
			a.ReadOnly = ptrTo(false)
		}
		if a.Kind == nil {
			a.Kind = ptrTo(v1.AzureSharedBlobDisk)
		}
	}
	if s := src.ScaleIO; s != nil {
		if s.StorageMode == "" {
			s.StorageMode = defaultScaleIOStorageMode
		}
		if s.FSType == "" {
			s.FSType = defaultScaleIOFSType
		}
	}
}

func defaultMode(mode **int32) {
	if *mode == nil {
		*mode = ptrTo(defaultVolumeFileMode)
	}
}

func ptrTo[T any](v T) *T { return &v }
