package app

import (
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
	"github.com/seed-kubelet/kubelet/internal/node/stats"
)

type syscallSysinfo struct{ total int64 }

func sysinfo(out *syscallSysinfo) error {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return err
	}
	out.total = int64(si.Totalram) * int64(si.Unit)
	return nil
}

// cadvisorMachine describes the machine for /metrics/cadvisor; what cannot
// be read is left zero (the node status reports the same failure).
func cadvisorMachine(rootDir string) stats.Machine {
	m, err := nodestatus.ReadMachineInfo(rootDir)
	if err != nil {
		klog.InfoS("Machine information incomplete for /metrics/cadvisor", "err", err)
	}
	topo := stats.ReadCPUTopology("/sys", m.NumCPU)
	return stats.Machine{
		MachineID: m.MachineID, SystemUUID: m.SystemUUID, BootID: m.BootID,
		KernelVersion: m.KernelVersion, OSImage: m.OSImage,
		Cores: m.NumCPU, PhysicalCores: topo.PhysicalCores, Sockets: topo.Sockets,
		MemoryBytes: m.MemoryCapacity, SwapBytes: m.SwapCapacity,
	}
}
