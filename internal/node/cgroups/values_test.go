package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func podWith(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: containers}}
}

func ctr(req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestPodResourceConfig(t *testing.T) {
	on := PodOptions{EnforceCPULimits: true, CPUPeriod: 100000}
	tests := []struct {
		name string
		pod  *v1.Pod
		opts PodOptions
		want ResourceConfig
	}{
		{
			name: "guaranteed: shares, quota, period and memory",
			pod:  podWith(ctr(rl("cpu", "500m", "memory", "64Mi"), rl("cpu", "500m", "memory", "64Mi"))),
			opts: on,
			want: ResourceConfig{CPUShares: u64(512), CPUQuota: i64(50000), CPUPeriod: u64(100000), Memory: i64(64 << 20)},
		},
		{
			name: "guaranteed with a custom CFS period",
			pod:  podWith(ctr(rl("cpu", "1", "memory", "64Mi"), rl("cpu", "1", "memory", "64Mi"))),
			opts: PodOptions{EnforceCPULimits: true, CPUPeriod: 50000},
			want: ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(50000), CPUPeriod: u64(50000), Memory: i64(64 << 20)},
		},
		{
			name: "cpuCFSQuota off: quota unlimited",
			pod:  podWith(ctr(rl("cpu", "1", "memory", "64Mi"), rl("cpu", "1", "memory", "64Mi"))),
			opts: PodOptions{CPUPeriod: 100000},
			want: ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(64 << 20)},
		},
		{
			name: "besteffort: minimum shares only",
			pod:  podWith(ctr(nil, nil)),
			opts: on,
			want: ResourceConfig{CPUShares: u64(2)},
		},
		{
			name: "burstable with requests only: shares only",
			pod:  podWith(ctr(rl("cpu", "250m"), nil)),
			opts: on,
			want: ResourceConfig{CPUShares: u64(256)},
		},
		{
			name: "burstable with all memory limits set but one cpu limit missing",
			pod: podWith(ctr(rl("cpu", "100m", "memory", "10Mi"), rl("cpu", "200m", "memory", "20Mi")),
				ctr(rl("cpu", "100m"), rl("memory", "30Mi"))),
			opts: on,
			want: ResourceConfig{CPUShares: u64(204), Memory: i64(50 << 20)},
		},
		{
			name: "tiny request is clamped to the minimum shares",
			pod:  podWith(ctr(rl("cpu", "1m"), nil)),
			opts: on,
			want: ResourceConfig{CPUShares: u64(2)},
		},
		{
			name: "podPidsLimit applies to every class",
			pod:  podWith(ctr(nil, nil)),
			opts: PodOptions{EnforceCPULimits: true, PodPidsLimit: 64},
			want: ResourceConfig{CPUShares: u64(2), PidsLimit: i64(64)},
		},
		{
			name: "pod overhead counts",
			pod: func() *v1.Pod {
				p := podWith(ctr(rl("cpu", "500m", "memory", "64Mi"), rl("cpu", "500m", "memory", "64Mi")))
				p.Spec.Overhead = rl("cpu", "500m", "memory", "16Mi")
				return p
			}(),
			opts: on,
			want: ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(80 << 20)},
		},
		{
			name: "init container peak raises the request",
			pod: func() *v1.Pod {
				p := podWith(ctr(rl("cpu", "100m"), nil))
				p.Spec.InitContainers = []v1.Container{ctr(rl("cpu", "2"), nil)}
				return p
			}(),
			opts: on,
			want: ResourceConfig{CPUShares: u64(2048)},
		},
		{
			// Upstream (ResourceConfigForPod) counts an init container's
			// limit together with the sidecars started before it, so the
			// unlimited init container still runs under the sidecar's limit.
			name: "an init container runs under the limits of earlier sidecars",
			pod: func() *v1.Pod {
				always := v1.ContainerRestartPolicyAlways
				side := ctr(rl("memory", "10Mi"), rl("memory", "20Mi"))
				side.Name, side.RestartPolicy = "side", &always
				p := podWith(ctr(rl("memory", "10Mi"), rl("memory", "30Mi")))
				p.Spec.InitContainers = []v1.Container{side, ctr(rl("cpu", "100m"), nil)}
				return p
			}(),
			opts: on,
			want: ResourceConfig{CPUShares: u64(102), Memory: i64(50 << 20)},
		},
		{
			name: "a memory limit at pod level declares the limit for all",
			pod: func() *v1.Pod {
				p := podWith(ctr(rl("memory", "10Mi"), nil))
				p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("memory", "64Mi"), Limits: rl("memory", "128Mi")}
				return p
			}(),
			opts: on,
			want: ResourceConfig{CPUShares: u64(2), Memory: i64(128 << 20)},
		},
		{
			// As upstream's ComputePodQOS: spec.resources, once set, alone
			// decides the class, and hugepages do not count for it.
			name: "pod-level resources naming only hugepages make the pod besteffort",
			pod: func() *v1.Pod {
				p := podWith(ctr(rl("cpu", "1", "memory", "64Mi"), rl("cpu", "1", "memory", "64Mi")))
				p.Spec.Resources = &v1.ResourceRequirements{Limits: rl("hugepages-2Mi", "4Mi")}
				return p
			}(),
			opts: on,
			want: ResourceConfig{CPUShares: u64(2)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodResourceConfig(tc.pod, tc.opts)
			if dump(got) != dump(tc.want) {
				t.Errorf("got  %s\nwant %s", dump(got), dump(tc.want))
			}
		})
	}
}

func TestQOSConfigs(t *testing.T) {
	pods := []*v1.Pod{
		podWith(ctr(rl("cpu", "200m"), nil)),                                           // burstable
		podWith(ctr(rl("cpu", "300m", "memory", "1Mi"), rl("cpu", "1"))),               // burstable
		podWith(ctr(rl("cpu", "1", "memory", "1Mi"), rl("cpu", "1", "memory", "1Mi"))), // guaranteed
		podWith(ctr(nil, nil)),                 // besteffort
		podWith(ctr(rl("memory", "1Mi"), nil)), // burstable, no cpu
	}
	b, be := QOSConfigs(pods)
	if *b.CPUShares != 512 || *be.CPUShares != 2 || b.Memory != nil {
		t.Errorf("burstable %s besteffort %s", dump(b), dump(be))
	}
	b, _ = QOSConfigs(nil)
	if *b.CPUShares != 2 {
		t.Errorf("no burstable pods: shares %d", *b.CPUShares)
	}
}

func TestNodeAllocatableAndLimits(t *testing.T) {
	capacity := rl("cpu", "2", "memory", "8Gi", "pid", "32768")
	alloc := NodeAllocatable(capacity, rl("cpu", "500m", "memory", "1Gi"), rl("memory", "512Mi", "pid", "1000"), nil)
	rc := LimitsConfig(alloc, false)
	if *rc.CPUShares != 1536 || *rc.Memory != (8<<30)-(1<<30)-(512<<20) || *rc.PidsLimit != 31768 || rc.CPUQuota != nil {
		t.Errorf("allocatable limits %s", dump(rc))
	}
	if over := NodeAllocatable(rl("memory", "1Gi"), rl("memory", "2Gi")); over.Memory().Value() != 0 {
		t.Errorf("over-reserved memory = %v, want 0", over.Memory())
	}
	cpuOnly := LimitsConfig(rl("cpu", "1", "memory", "1Gi"), true)
	if *cpuOnly.CPUShares != 1024 || cpuOnly.Memory != nil {
		t.Errorf("compressible limits %s", dump(cpuOnly))
	}
}
