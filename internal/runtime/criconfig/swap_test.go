package criconfig

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// TestSwapAsUpstream follows upstream's TestGenerateLinuxContainerResourcesWithSwap
// (pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go): a node with
// 40 GiB of memory and 5 GiB of swap, a pod of two containers, each case
// checking both containers' swap settings.
func TestSwapAsUpstream(t *testing.T) {
	const (
		nodeMemory = 40 << 30
		nodeSwap   = 5 << 30
	)
	// upstream's calcSwapForBurstablePods: request / node memory × node
	// swap, so 1 GiB of request gets 128 MiB of swap and 2 GiB 256 MiB.
	share := map[int64]string{1 << 30: "134217728", 2 << 30: "268435456"}
	type want struct {
		// unset: no swap setting at all (no swap controller).
		unset bool
		// v2Max is memory.swap.max on cgroup v2; on v1 memsw equals the
		// memory limit whenever the controller is there.
		v2Max string
	}
	noSwap := want{v2Max: "0"}
	for _, tc := range []struct {
		name               string
		cgroupV2           bool
		qos                v1.PodQOSClass
		swapDisabledOnNode bool
		behavior           string
		withoutRequests    bool
		guaranteedSecond   bool
		critical           bool
		want               [2]want
	}{
		{name: "cgroups v1, LimitedSwap, Burstable QoS", qos: v1.PodQOSBurstable, behavior: SwapLimitedSwap, want: [2]want{noSwap, noSwap}},
		{name: "cgroups v1, LimitedSwap, Best-effort QoS", qos: v1.PodQOSBestEffort, behavior: SwapLimitedSwap, want: [2]want{noSwap, noSwap}},
		{name: "With no swapBehavior - NoSwap should be the default", cgroupV2: true, qos: v1.PodQOSBestEffort, want: [2]want{noSwap, noSwap}},
		{name: "Best-effort QoS, cgroups v2, NoSwap", cgroupV2: true, qos: v1.PodQOSBestEffort, behavior: SwapNoSwap, want: [2]want{noSwap, noSwap}},
		{name: "Burstable QoS, cgroups v2, NoSwap", cgroupV2: true, qos: v1.PodQOSBurstable, behavior: SwapNoSwap, want: [2]want{noSwap, noSwap}},
		{name: "Guaranteed QoS, cgroups v2, LimitedSwap", cgroupV2: true, qos: v1.PodQOSGuaranteed, behavior: SwapLimitedSwap, want: [2]want{noSwap, noSwap}},
		{name: "Burstable QoS, cgroups v2, LimitedSwap, with a guaranteed container", cgroupV2: true, qos: v1.PodQOSBurstable,
			behavior: SwapLimitedSwap, guaranteedSecond: true, want: [2]want{{v2Max: share[1<<30]}, noSwap}},
		{name: "Burstable QoS, cgroups v2, LimitedSwap", cgroupV2: true, qos: v1.PodQOSBurstable, behavior: SwapLimitedSwap,
			want: [2]want{{v2Max: share[1<<30]}, {v2Max: share[2<<30]}}},
		{name: "Burstable QoS, cgroups v2, LimitedSwap, with a container with no requests", cgroupV2: true, qos: v1.PodQOSBurstable,
			behavior: SwapLimitedSwap, withoutRequests: true, want: [2]want{{v2Max: share[1<<30]}, noSwap}},
		{name: "Swap disabled on node, cgroups v1, LimitedSwap, Burstable QoS", swapDisabledOnNode: true, qos: v1.PodQOSBurstable,
			behavior: SwapLimitedSwap, want: [2]want{{unset: true}, {unset: true}}},
		{name: "Swap disabled on node, cgroups v2, LimitedSwap, Burstable QoS", swapDisabledOnNode: true, cgroupV2: true, qos: v1.PodQOSBurstable,
			behavior: SwapLimitedSwap, want: [2]want{{unset: true}, {unset: true}}},
		{name: "Swap disabled on node, no swapBehavior", swapDisabledOnNode: true, cgroupV2: true, qos: v1.PodQOSBestEffort,
			want: [2]want{{unset: true}, {unset: true}}},
		{name: "Burstable QoS, cgroups v2, LimitedSwap, critical pod", cgroupV2: true, qos: v1.PodQOSBurstable, behavior: SwapLimitedSwap,
			critical: true, want: [2]want{noSwap, noSwap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
				p.Spec.Containers[1].Name = "second"
				c1, c2 := &p.Spec.Containers[0].Resources, &p.Spec.Containers[1].Resources
				switch tc.qos {
				case v1.PodQOSBurstable:
					c1.Requests = rl("memory", "1Gi")
					if !tc.withoutRequests {
						c2.Requests = rl("memory", "2Gi")
						if tc.guaranteedSecond {
							c2.Limits = rl("memory", "2Gi")
						}
					}
				case v1.PodQOSGuaranteed:
					c1.Requests, c1.Limits = rl("memory", "1Gi", "cpu", "1"), rl("memory", "1Gi", "cpu", "1")
					c2.Requests, c2.Limits = rl("memory", "2Gi", "cpu", "1"), rl("memory", "2Gi", "cpu", "1")
				}
				if tc.critical {
					p.Spec.Priority = ptr(int32(podutil.SystemCriticalPriority))
				}
			})
			o := Options{
				MachineMemoryBytes: nodeMemory, SwapCapacityBytes: nodeSwap, CgroupV2: tc.cgroupV2, SingleProcessOOMKill: true,
				SwapControllerAvailable: !tc.swapDisabledOnNode, MemorySwapBehavior: tc.behavior,
			}
			for i := range pod.Spec.Containers {
				cfg, err := ContainerConfig(context.Background(), ContainerInputs{Pod: pod, Container: &pod.Spec.Containers[i]}, o)
				if err != nil {
					t.Fatalf("ContainerConfig: %v", err)
				}
				checkSwap(t, pod.Spec.Containers[i].Name, cfg.Linux.Resources, tc.cgroupV2, tc.want[i].unset, tc.want[i].v2Max)
			}
		})
	}
}

func checkSwap(t *testing.T, name string, r *runtimeapi.LinuxContainerResources, cgroupV2, unset bool, v2Max string) {
	t.Helper()
	got, set := r.Unified[unifiedSwapMax]
	switch {
	case unset:
		if set || r.MemorySwapLimitInBytes != 0 {
			t.Errorf("%s: swap configured without a swap controller: memory.swap.max=%q memsw=%d", name, got, r.MemorySwapLimitInBytes)
		}
	case cgroupV2:
		if got != v2Max || r.MemorySwapLimitInBytes != 0 {
			t.Errorf("%s: memory.swap.max = %q (set %v), memsw %d; want %q", name, got, set, r.MemorySwapLimitInBytes, v2Max)
		}
	default:
		if set || r.MemorySwapLimitInBytes != r.MemoryLimitInBytes {
			t.Errorf("%s: cgroup v1 memsw = %d, memory limit %d, memory.swap.max %q; want memsw equal to the limit and no v2 key",
				name, r.MemorySwapLimitInBytes, r.MemoryLimitInBytes, got)
		}
	}
}
