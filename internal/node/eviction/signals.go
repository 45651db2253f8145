package eviction

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

// Observation is one signal's value in a stats summary.
type Observation struct {
	Available, Capacity resource.Quantity
	// Time is when the stats behind it were read.
	Time time.Time
}

// Observations are the signals of one summary.
type Observations map[evictionapi.Signal]Observation

// Observe computes the signals from a summary as upstream does:
// memory.available is capacity (available + working set of the root
// cgroup) minus the working set; allocatableMemory.available the same for
// the pods' cgroup; the filesystem signals come from the node's root
// filesystem (nodefs) and the runtime's image filesystem; pid.available is
// the task limit minus the tasks running. A signal whose inputs are missing
// is left out.
func Observe(s *statsapi.Summary) Observations {
	out := Observations{}
	if s == nil {
		return out
	}
	n := s.Node
	addMemory := func(sig evictionapi.Signal, m *statsapi.MemoryStats) {
		if m == nil || m.AvailableBytes == nil || m.WorkingSetBytes == nil {
			return
		}
		out[sig] = Observation{
			Available: *resource.NewQuantity(int64(*m.AvailableBytes), resource.BinarySI),
			Capacity:  *resource.NewQuantity(int64(*m.AvailableBytes+*m.WorkingSetBytes), resource.BinarySI),
			Time:      m.Time.Time,
		}
	}
	addMemory(evictionapi.SignalMemoryAvailable, n.Memory)
	for i := range n.SystemContainers {
		if c := n.SystemContainers[i]; c.Name == statsapi.SystemContainerPods {
			addMemory(evictionapi.SignalAllocatableMemoryAvailable, c.Memory)
		}
	}
	addFs := func(bytes, inodes evictionapi.Signal, fs *statsapi.FsStats) {
		if fs == nil {
			return
		}
		if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
			out[bytes] = Observation{
				Available: *resource.NewQuantity(int64(*fs.AvailableBytes), resource.BinarySI),
				Capacity:  *resource.NewQuantity(int64(*fs.CapacityBytes), resource.BinarySI),
				Time:      fs.Time.Time,
			}
		}
		if fs.InodesFree != nil && fs.Inodes != nil {
			out[inodes] = Observation{
				Available: *resource.NewQuantity(int64(*fs.InodesFree), resource.DecimalSI),
				Capacity:  *resource.NewQuantity(int64(*fs.Inodes), resource.DecimalSI),
				Time:      fs.Time.Time,
			}
		}
	}
	addFs(evictionapi.SignalNodeFsAvailable, evictionapi.SignalNodeFsInodesFree, n.Fs)
	if n.Runtime != nil {
		addFs(evictionapi.SignalImageFsAvailable, evictionapi.SignalImageFsInodesFree, n.Runtime.ImageFs)
		addFs(evictionapi.SignalContainerFsAvailable, evictionapi.SignalContainerFsInodesFree, n.Runtime.ContainerFs)
	}
	if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		out[evictionapi.SignalPIDAvailable] = Observation{
			Available: *resource.NewQuantity(*r.MaxPID-*r.NumOfRunningProcesses, resource.DecimalSI),
			Capacity:  *resource.NewQuantity(*r.MaxPID, resource.DecimalSI),
			Time:      r.Time.Time,
		}
	}
	return out
}
