package hostinfo

import (
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/procfs"
)

// Memory is /proc/meminfo in bytes, for the fields the kubelet reads.
type Memory struct {
	MemTotal, MemFree, SwapTotal, SwapFree uint64
	// InactiveFile and AnonPages are nil when the kernel does not report
	// them.
	InactiveFile, AnonPages *uint64
}

// Meminfo reads /proc/meminfo (prometheus/procfs parses it); a file
// without MemTotal is an error.
func (h Host) Meminfo() (Memory, error) {
	fs, err := procfs.NewFS(h.path("/proc"))
	if err != nil {
		return Memory{}, fmt.Errorf("reading /proc/meminfo: %w", err)
	}
	mi, err := fs.Meminfo()
	if err != nil {
		return Memory{}, fmt.Errorf("reading /proc/meminfo: %w", err)
	}
	if mi.MemTotalBytes == nil {
		return Memory{}, fmt.Errorf("/proc/meminfo has no MemTotal")
	}
	return Memory{
		MemTotal: *mi.MemTotalBytes, MemFree: deref(mi.MemFreeBytes),
		SwapTotal: deref(mi.SwapTotalBytes), SwapFree: deref(mi.SwapFreeBytes),
		InactiveFile: mi.InactiveFileBytes, AnonPages: mi.AnonPagesBytes,
	}, nil
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// ProcessCgroups maps each controller of /proc/<pid>/cgroup to the
// process's cgroup path (prometheus/procfs parses it). A v1 hierarchy
// mounting several controllers gives each its own key; the v2 line
// ("0::/path") is under "".
func (h Host) ProcessCgroups(pid int) (map[string]string, error) {
	fs, err := procfs.NewFS(h.path("/proc"))
	if err != nil {
		return nil, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return nil, err
	}
	cgs, err := p.Cgroups()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cg := range cgs {
		if len(cg.Controllers) == 0 {
			out[""] = cg.Path
			continue
		}
		for _, c := range cg.Controllers {
			out[c] = cg.Path
		}
	}
	return out, nil
}

// SwapOn returns the lines of /proc/swaps when swap is on (the header and
// at least one device), nil when it is off or the kernel keeps no swap
// accounting. The lines are kept as read for upstream's failSwapOn message.
func (h Host) SwapOn() ([]string, error) {
	data, err := os.ReadFile(h.path("/proc/swaps"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 1 {
		return lines, nil
	}
	return nil, nil
}
