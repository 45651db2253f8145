package criconfig

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCPUConversions(t *testing.T) {
	tests := []struct {
		name       string
		milli      int64
		wantShares int64
		wantQuota  int64
	}{
		{name: "none", milli: 0, wantShares: 2, wantQuota: 0},
		{name: "one millicore", milli: 1, wantShares: 2, wantQuota: 1000},
		{name: "quarter cpu", milli: 250, wantShares: 256, wantQuota: 25000},
		{name: "one cpu", milli: 1000, wantShares: 1024, wantQuota: 100000},
		{name: "huge request capped", milli: 1_000_000, wantShares: 262144, wantQuota: 100_000_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MilliCPUToShares(tc.milli); got != tc.wantShares {
				t.Errorf("shares = %d, want %d", got, tc.wantShares)
			}
			if got := MilliCPUToQuota(tc.milli, 100000); got != tc.wantQuota {
				t.Errorf("quota = %d, want %d", got, tc.wantQuota)
			}
		})
	}
}

func TestContainerResources(t *testing.T) {
	const gi = int64(1 << 30)
	base := Options{MachineMemoryBytes: 10 * gi}
	res := func(req, lim v1.ResourceList) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: req, Limits: lim} }
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		o    Options
		want *runtimeapi.LinuxContainerResources
	}{
		{
			name: "best effort",
			pod:  testPod(),
			o:    base,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
		},
		{
			name: "guaranteed",
			pod:  testPod(res(rl("cpu", "500m", "memory", "256Mi"), rl("cpu", "500m", "memory", "256Mi"))),
			o:    base,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: -997},
		},
		{
			name: "burstable with request only",
			pod:  testPod(res(rl("cpu", "100m", "memory", "1Gi"), nil)),
			o:    base,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, OomScoreAdj: 900},
		},
		{
			name: "limit without request sets shares from the limit",
			pod:  testPod(res(nil, rl("cpu", "2"))),
			o:    base,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuPeriod: 100000, CpuQuota: 200000, OomScoreAdj: 999},
		},
		{
			name: "tiny limit gets the minimum quota",
			pod:  testPod(res(rl("cpu", "1m"), rl("cpu", "5m"))),
			o:    base,
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000, OomScoreAdj: 999},
		},
		{
			name: "cfs quota disabled",
			pod:  testPod(res(rl("cpu", "1"), rl("cpu", "1"))),
			o:    Options{MachineMemoryBytes: 10 * gi, DisableCPUCFSQuota: true},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 1024, OomScoreAdj: 999},
		},
		{
			name: "custom cfs period",
			pod:  testPod(res(rl("cpu", "1"), rl("cpu", "1"))),
			o:    Options{MachineMemoryBytes: 10 * gi, CPUCFSQuotaPeriod: 50000},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 50000, CpuQuota: 50000, OomScoreAdj: 999},
		},
		{
			name: "container inherits pod-level limits",
			pod: testPod(res(rl("cpu", "100m"), nil), func(p *v1.Pod) {
				p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "2Gi")}
			}),
			o: base,
			// pod-level memory request 1Gi is unclaimed: 1000 - 1000*1Gi/10Gi.
			want: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 200000, MemoryLimitInBytes: 2 * gi, OomScoreAdj: 900},
		},
		{
			name: "cgroup v2 kills the whole container on OOM",
			pod:  testPod(),
			o:    Options{MachineMemoryBytes: 10 * gi, CgroupV2: true},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000, Unified: map[string]string{"memory.oom.group": "1"}},
		},
		{
			name: "single process OOM kill",
			pod:  testPod(),
			o:    Options{MachineMemoryBytes: 10 * gi, CgroupV2: true, SingleProcessOOMKill: true},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
		},
		{
			name: "hugepages: every host size listed, requested one set",
			pod:  testPod(res(rl("memory", "64Mi", "hugepages-2Mi", "8Mi"), rl("memory", "64Mi", "hugepages-2Mi", "8Mi", "hugepages-1Gi", "2Gi"))),
			o:    Options{MachineMemoryBytes: 10 * gi, HugePageSizes: []string{"2MB", "1GB", "64KB"}},
			want: &runtimeapi.LinuxContainerResources{
				CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 64 << 20, OomScoreAdj: 994,
				HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 << 20}, {PageSize: "1GB", Limit: 2 * uint64(gi)}, {PageSize: "64KB"}},
			},
		},
		{
			name: "no swap on cgroup v1 caps memory+swap at the memory limit",
			pod:  testPod(res(rl("memory", "1Gi"), rl("memory", "2Gi"))),
			o:    Options{MachineMemoryBytes: 10 * gi, SwapControllerAvailable: true},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 2 * gi, MemorySwapLimitInBytes: 2 * gi, OomScoreAdj: 900},
		},
		{
			name: "no swap on cgroup v2",
			pod:  testPod(res(rl("memory", "1Gi"), rl("memory", "2Gi"))),
			o:    Options{MachineMemoryBytes: 10 * gi, SwapControllerAvailable: true, CgroupV2: true, SingleProcessOOMKill: true},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 2 * gi, OomScoreAdj: 900, Unified: map[string]string{"memory.swap.max": "0"}},
		},
		{
			name: "limited swap shares node swap by memory request",
			pod:  testPod(res(rl("memory", "1Gi"), rl("memory", "2Gi"))),
			o: Options{MachineMemoryBytes: 10 * gi, SwapControllerAvailable: true, CgroupV2: true, SingleProcessOOMKill: true,
				MemorySwapBehavior: SwapLimitedSwap, SwapCapacityBytes: 5 * gi},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, MemoryLimitInBytes: 2 * gi, OomScoreAdj: 900,
				Unified: map[string]string{"memory.swap.max": "536870912"}},
		},
		{
			name: "limited swap denied to a guaranteed pod",
			pod:  testPod(res(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))),
			o: Options{MachineMemoryBytes: 10 * gi, SwapControllerAvailable: true, CgroupV2: true, SingleProcessOOMKill: true,
				MemorySwapBehavior: SwapLimitedSwap, SwapCapacityBytes: 5 * gi},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, MemoryLimitInBytes: gi, OomScoreAdj: -997,
				Unified: map[string]string{"memory.swap.max": "0"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ContainerConfig(context.Background(), ContainerInputs{Pod: tc.pod, Container: &tc.pod.Spec.Containers[0]}, tc.o)
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if !proto.Equal(cfg.Linux.Resources, tc.want) {
				t.Errorf("resources =\n%v\nwant\n%v", cfg.Linux.Resources, tc.want)
			}
		})
	}
}

func TestHugePageSizeName(t *testing.T) {
	tests := []struct {
		name    string
		bytes   int64
		want    string
		wantErr bool
	}{
		{name: "64KiB", bytes: 64 << 10, want: "64KB"},
		{name: "2MiB", bytes: 2 << 20, want: "2MB"},
		{name: "1GiB", bytes: 1 << 30, want: "1GB"},
		{name: "odd bytes", bytes: 1000, want: "1000B"},
		{name: "not a whole unit", bytes: 3000 << 10, wantErr: true},
		{name: "zero", bytes: 0, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HugePageSizeName(tc.bytes)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
