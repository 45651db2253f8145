package stats

import (
	"reflect"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestAssembleContainer(t *testing.T) {
	now := time.Unix(2000, 0)
	ctr := container("c", "sb", "app", true, 1e9)
	nodeFs := &fsInfo{Capacity: 100, Available: 40, Inodes: 10, InodesFree: 4}
	tests := []struct {
		name   string
		in     containerInput
		nodeFs *fsInfo
		check  func(t *testing.T, cs statsapi.ContainerStats)
	}{
		{
			name: "runtime without cpu, memory or swap reads zero",
			in:   containerInput{Container: ctr, Stats: &runtimeapi.ContainerStats{}},
			check: func(t *testing.T, cs statsapi.ContainerStats) {
				if *cs.CPU.UsageCoreNanoSeconds != 0 || *cs.CPU.UsageNanoCores != 0 || *cs.Memory.WorkingSetBytes != 0 || *cs.Swap.SwapUsageBytes != 0 {
					t.Errorf("got %+v", cs)
				}
				if !cs.CPU.Time.Time.Equal(now) {
					t.Errorf("cpu time = %v, want now", cs.CPU.Time)
				}
			},
		},
		{
			name: "cpu and memory only: no filesystems",
			in:   containerInput{Container: ctr, Stats: ctrStats("c", "app", 5e9, 7, 8, 9, "/x"), Logs: &diskUsage{Bytes: 1, Inodes: 1}},
			check: func(t *testing.T, cs statsapi.ContainerStats) {
				if cs.Rootfs != nil || cs.Logs != nil {
					t.Errorf("rootfs %v logs %v, want none", cs.Rootfs, cs.Logs)
				}
				if cs.Name != "app" || cs.StartTime.UnixNano() != 1e9 || *cs.CPU.UsageCoreNanoSeconds != 7 || cs.CPU.Time.UnixNano() != 5e9 {
					t.Errorf("got %+v", cs)
				}
			},
		},
		{
			name:   "writable layer on an unknown filesystem keeps its usage",
			in:     containerInput{Container: ctr, Stats: ctrStats("c", "app", 5e9, 7, 8, 9, "/x"), UsageNanoCores: u64(42)},
			nodeFs: nodeFs,
			check: func(t *testing.T, cs statsapi.ContainerStats) {
				if *cs.Rootfs.UsedBytes != 8192 || cs.Rootfs.CapacityBytes != nil || cs.Logs != nil || *cs.CPU.UsageNanoCores != 42 {
					t.Errorf("got rootfs %+v logs %+v", cs.Rootfs, cs.Logs)
				}
			},
		},
		{
			name:   "logs are framed by the nodefs",
			in:     containerInput{Container: ctr, Stats: ctrStats("c", "app", 5e9, 7, 8, 9, "/x"), RootfsFs: &fsInfo{Capacity: 500}, Logs: &diskUsage{Bytes: 4096, Inodes: 2}},
			nodeFs: nodeFs,
			check: func(t *testing.T, cs statsapi.ContainerStats) {
				want := &statsapi.FsStats{Time: cs.Logs.Time, AvailableBytes: u64(40), CapacityBytes: u64(100), Inodes: u64(10), InodesFree: u64(4), UsedBytes: u64(4096), InodesUsed: u64(2)}
				if !reflect.DeepEqual(cs.Logs, want) || *cs.Rootfs.CapacityBytes != 500 {
					t.Errorf("logs %+v rootfs %+v", cs.Logs, cs.Rootfs)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, assembleContainer(tc.in, tc.nodeFs, now))
		})
	}
}

func TestAssemblePodSums(t *testing.T) {
	now := time.Unix(2000, 0)
	sb := sandbox("sb", "ns", "p", "u", true, 3e9)
	two := []containerInput{
		{Container: container("c2", "sb", "b", true, 1), Stats: ctrStats("c2", "b", 5e9, 20, 200, 300, ""), UsageNanoCores: u64(2)},
		{Container: container("c1", "sb", "a", true, 1), Stats: ctrStats("c1", "a", 6e9, 10, 100, 150, "")},
	}
	tests := []struct {
		name      string
		in        podInput
		wantNames []string
		wantCPU   uint64
		wantRate  *uint64
		wantWS    uint64
		wantTime  int64
	}{
		{name: "sums and sorts containers", in: podInput{Sandbox: sb, Containers: two}, wantNames: []string{"a", "b"}, wantCPU: 30, wantRate: u64(2), wantWS: 300, wantTime: 6e9},
		{name: "rate nil when no container has one", in: podInput{Sandbox: sb, Containers: two[1:]}, wantNames: []string{"a"}, wantCPU: 10, wantWS: 100, wantTime: 6e9},
		{
			name:      "pod-level figures win over sums",
			in:        podInput{Sandbox: sb, Containers: two, CPU: cpuStats(u64(99), u64(1), now), Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(77)}},
			wantNames: []string{"a", "b"}, wantCPU: 99, wantRate: u64(1), wantWS: 77, wantTime: now.UnixNano(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := assemblePod(tc.in, nil, now)
			if got := containerNames(ps); !reflect.DeepEqual(got, tc.wantNames) {
				t.Errorf("containers = %v, want %v", got, tc.wantNames)
			}
			if *ps.CPU.UsageCoreNanoSeconds != tc.wantCPU || !reflect.DeepEqual(ps.CPU.UsageNanoCores, tc.wantRate) || ps.CPU.Time.UnixNano() != tc.wantTime {
				t.Errorf("cpu = %d rate %v time %v", *ps.CPU.UsageCoreNanoSeconds, deref(ps.CPU.UsageNanoCores), ps.CPU.Time)
			}
			if *ps.Memory.WorkingSetBytes != tc.wantWS {
				t.Errorf("working set = %d, want %d", *ps.Memory.WorkingSetBytes, tc.wantWS)
			}
			if ps.PodRef != (statsapi.PodReference{Name: "p", Namespace: "ns", UID: "u"}) || ps.StartTime.UnixNano() != 3e9 {
				t.Errorf("ref %+v start %v", ps.PodRef, ps.StartTime)
			}
			if ps.EphemeralStorage != nil || ps.Network != nil {
				t.Errorf("cpu-and-memory pod has storage or network")
			}
		})
	}
}

func TestCRIMemory(t *testing.T) {
	tests := []struct {
		name      string
		available *runtimeapi.UInt64Value
		want      *uint64
	}{
		{name: "zero available (no limit) dropped", available: &runtimeapi.UInt64Value{}, want: nil},
		{name: "absent stays absent", available: nil, want: nil},
		{name: "real headroom kept", available: &runtimeapi.UInt64Value{Value: 5}, want: u64(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := criMemory(&runtimeapi.MemoryUsage{AvailableBytes: tc.available, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 1}}, time.Unix(1, 0))
			if !reflect.DeepEqual(got.AvailableBytes, tc.want) || *got.WorkingSetBytes != 1 {
				t.Errorf("got %+v", got)
			}
		})
	}
}
