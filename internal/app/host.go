package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/seed-kubelet/kubelet/internal/app/options"
	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
	"github.com/seed-kubelet/kubelet/internal/runtime/criconfig"
)

// hostInfo is what start-up learns about the machine.
type hostInfo struct {
	nodeName string
	ips      []string
	podsDir  string
	// machine and cgroups are read once, here (cgroupsErr when the
	// machine has no usable cgroups).
	machine    hostinfo.Machine
	cgroups    hostinfo.Cgroups
	cgroupsErr error
	// swapController says the memory cgroup controls swap (upstream's
	// swap controller check); swapOn that the node has swap enabled.
	swapController, swapOn bool
}

// prepareHost checks and prepares the machine: node name, swap, the
// kubelet's own OOM score and rlimits, its directories and addresses.
func prepareHost(cfg *kubeletconfig.KubeletConfiguration, flags options.KubeletFlags) (hostInfo, error) {
	var h hostInfo
	var err error
	if h.nodeName, err = options.NodeName(flags.HostnameOverride); err != nil {
		return h, err
	}
	local := hostinfo.LocalHost()
	if err := checkSwap(derefBool(cfg.FailSwapOn, true), local.SwapOn); err != nil {
		return h, err
	}
	if lines, err := local.SwapOn(); err == nil && len(lines) > 0 {
		h.swapOn = true
	}
	applyOOMScore(derefInt32(cfg.OOMScoreAdj))
	applyMaxOpenFiles(cfg.MaxOpenFiles)
	h.podsDir = filepath.Join(flags.RootDirectory, "pods")
	for _, dir := range []string{flags.RootDirectory, h.podsDir, cfg.PodLogsDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return h, fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	if h.machine, err = local.Machine(flags.RootDirectory); err != nil {
		return h, fmt.Errorf("read machine information: %w", err)
	}
	h.cgroups, h.cgroupsErr = local.Cgroups(hostinfo.DefaultCgroupRoot)
	if h.cgroupsErr == nil {
		h.swapController = local.SwapControllerAvailable(h.cgroups)
	}
	if err := checkSwapBehavior(cfg.MemorySwap.SwapBehavior, derefBool(cfg.FailSwapOn, true), h.cgroups.Unified); err != nil {
		return h, err
	}
	h.ips, err = nodeIPs(flags.NodeIP, h.nodeName)
	return h, err
}

// lockFile takes --lock-file (when set) and, with
// --exit-on-lock-contention, calls onContention once another process
// opens it. The returned func releases it.
func lockFile(flags options.KubeletFlags, onContention func()) (func(), error) {
	if flags.LockFilePath == "" {
		return func() {}, nil
	}
	klog.InfoS("Acquiring file lock", "path", flags.LockFilePath)
	lock, err := acquireLock(flags.LockFilePath)
	if err != nil {
		return nil, err
	}
	if flags.ExitOnLockContention {
		if err := watchLockContention(flags.LockFilePath, onContention); err != nil {
			lock.Close()
			return nil, err
		}
	}
	return func() { lock.Close() }, nil
}

// applyOOMScore sets the kubelet's own oom_score_adj. Lowering it needs
// CAP_SYS_RESOURCE; without it the kubelet logs and goes on (fail soft).
func applyOOMScore(score int32) {
	path := fmt.Sprintf("/proc/%d/oom_score_adj", os.Getpid())
	if err := os.WriteFile(path, []byte(strconv.Itoa(int(score))), 0o644); err != nil {
		klog.InfoS("Cannot set the kubelet's OOM score; going on without it", "oomScoreAdj", score, "err", err)
		return
	}
	klog.V(2).InfoS("Set the kubelet's OOM score", "oomScoreAdj", score)
}

// applyMaxOpenFiles raises RLIMIT_NOFILE; failure is logged, not fatal.
func applyMaxOpenFiles(n int64) {
	if n <= 0 {
		return
	}
	lim := syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		klog.InfoS("Cannot set the open files limit; going on without it", "maxOpenFiles", n, "err", err)
	}
}

// nodeIPs returns the node's addresses: --node-ip when given (and not the
// unspecified 0.0.0.0 or ::, which asks for detection as upstream), else
// the addresses the node name resolves to, else the first global unicast
// address of an interface that is up.
func nodeIPs(nodeIP, nodeName string) ([]string, error) {
	if nodeIP != "" {
		var out []string
		for _, s := range splitComma(nodeIP) {
			ip := net.ParseIP(s)
			if ip == nil {
				return nil, fmt.Errorf("--node-ip %q is not an IP address", s)
			}
			out = append(out, ip.String())
		}
		if len(out) != 1 || !net.ParseIP(out[0]).IsUnspecified() {
			return out, nil
		}
	}
	if addrs, err := net.LookupIP(nodeName); err == nil {
		for _, ip := range addrs {
			if ip.To4() != nil && !ip.IsLoopback() {
				return []string{ip.String()}, nil
			}
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	var fallback string
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() == nil || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if iface.Name == "cni0" || iface.Name == "docker0" {
				if fallback == "" {
					fallback = ipn.IP.String()
				}
				continue
			}
			return []string{ipn.IP.String()}, nil
		}
	}
	if fallback != "" {
		return []string{fallback}, nil
	}
	return []string{"127.0.0.1"}, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// acquireLock takes an exclusive flock on path, waiting for it as upstream.
func acquireLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// watchLockContention calls onContention when another process opens the
// lock file (--exit-on-lock-contention).
func watchLockContention(path string, onContention func()) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN|unix.IN_DELETE_SELF); err != nil {
		unix.Close(fd)
		return fmt.Errorf("watch lock file %s: %w", path, err)
	}
	go func() {
		buf := make([]byte, unix.SizeofInotifyEvent*16+unix.NAME_MAX+1)
		for {
			n, err := unix.Read(fd, buf)
			if err != nil || n > 0 {
				onContention()
				return
			}
		}
	}()
	return nil
}

// checkSwap fails start-up when swap is on and failSwapOn is set, as
// upstream; swapOn returns /proc/swaps' lines when swap is on.
func checkSwap(failSwapOn bool, swapOn func() ([]string, error)) error {
	if !failSwapOn {
		return nil
	}
	lines, err := swapOn()
	if err != nil {
		return nil // no swap accounting: nothing is swapped
	}
	if len(lines) > 0 {
		return fmt.Errorf("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false. /proc/swaps contained: %v", lines)
	}
	return nil
}

// checkSwapBehavior is upstream's start-up check of memorySwap.swapBehavior
// (the NodeSwap feature is GA and locked on): LimitedSwap needs cgroup v2,
// and an unset behaviour on a node that allows swap means NoSwap.
func checkSwapBehavior(behavior string, failSwapOn, cgroupV2 bool) error {
	if !cgroupV2 && behavior == criconfig.SwapLimitedSwap {
		// This feature is not supported for cgroup v1, so upstream fails early.
		return errors.New("swap feature is enabled and LimitedSwap but it is only supported with cgroupv2")
	}
	if !failSwapOn && behavior == "" {
		klog.InfoS("NoSwap is set due to memorySwapBehavior not specified", "memorySwapBehavior", behavior, "FailSwapOn", failSwapOn)
	}
	return nil
}
