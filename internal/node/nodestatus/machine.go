package nodestatus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MachineInfo is what the node status reports about the machine itself.
type MachineInfo struct {
	MachineID, SystemUUID, BootID string
	KernelVersion, OSImage        string
	OperatingSystem, Architecture string
	NumCPU                        int
	MemoryCapacity                int64 // bytes (MemTotal)
	SwapCapacity                  int64 // bytes (SwapTotal)
	// HugePages maps a page size name ("2Mi", "1Gi") to the bytes of huge
	// pages of that size the kernel holds; sizes with no pages count too.
	HugePages                map[string]int64
	EphemeralStorageCapacity int64 // bytes of the filesystem holding the root dir
}

// Host is the machine ReadMachineInfo looks at. Every part is required;
// LocalHost returns the real one and tests build their own.
type Host struct {
	// FS is the host's root directory; paths are read without the leading
	// slash ("proc/meminfo").
	FS fs.FS
	// KernelRelease returns what `uname -r` prints.
	KernelRelease func() (string, error)
	// FSCapacity returns the size in bytes of the filesystem holding path.
	FSCapacity func(path string) (int64, error)
	// NumCPU is the fallback CPU count when the online CPU list is unreadable.
	NumCPU func() int
}

// LocalHost is the machine the kubelet runs on.
func LocalHost() Host {
	return Host{
		FS:            os.DirFS("/"),
		KernelRelease: unameRelease,
		FSCapacity:    statfsCapacity,
		NumCPU:        runtime.NumCPU,
	}
}

// ReadMachineInfo reads the local machine's description; rootDir is the
// kubelet's root directory, whose filesystem is the ephemeral storage.
func ReadMachineInfo(rootDir string) (MachineInfo, error) {
	return LocalHost().MachineInfo(rootDir)
}

// MachineInfo reads the machine's description. It returns everything it could
// read together with an error naming what it could not: the memory size, the
// boot ID, the kernel release and the root dir's filesystem are required;
// machine ID, system UUID, OS image, swap and huge pages are optional.
func (h Host) MachineInfo(rootDir string) (MachineInfo, error) {
	info := MachineInfo{
		OperatingSystem: runtime.GOOS,
		Architecture:    runtime.GOARCH,
		HugePages:       map[string]int64{},
	}
	var errs []error

	info.MachineID = h.firstLine("etc/machine-id", "var/lib/dbus/machine-id")
	info.SystemUUID = h.firstLine("sys/class/dmi/id/product_uuid")
	if id := h.firstLine("proc/sys/kernel/random/boot_id"); id != "" {
		info.BootID = id
	} else {
		errs = append(errs, errors.New("reading the boot ID from /proc/sys/kernel/random/boot_id failed"))
	}

	if rel, err := h.KernelRelease(); err != nil {
		errs = append(errs, fmt.Errorf("reading the kernel release: %w", err))
	} else {
		info.KernelVersion = rel
	}
	info.OSImage = h.osImage()

	info.NumCPU = h.NumCPU()
	if b, err := fs.ReadFile(h.FS, "sys/devices/system/cpu/online"); err == nil {
		if n, err := countCPUList(string(b)); err == nil && n > 0 {
			info.NumCPU = n
		}
	}

	if b, err := fs.ReadFile(h.FS, "proc/meminfo"); err != nil {
		errs = append(errs, fmt.Errorf("reading /proc/meminfo: %w", err))
	} else {
		mem := parseMeminfo(b)
		total, ok := mem["MemTotal"]
		if !ok {
			errs = append(errs, errors.New("/proc/meminfo has no MemTotal"))
		}
		info.MemoryCapacity = total
		info.SwapCapacity = mem["SwapTotal"]
	}

	if pages, err := h.hugePages(); err != nil {
		errs = append(errs, err)
	} else {
		info.HugePages = pages
	}

	if c, err := h.FSCapacity(rootDir); err != nil {
		errs = append(errs, fmt.Errorf("measuring the filesystem of %s: %w", rootDir, err))
	} else {
		info.EphemeralStorageCapacity = c
	}
	return info, errors.Join(errs...)
}

// firstLine returns the trimmed content of the first readable, non-empty file.
func (h Host) firstLine(paths ...string) string {
	for _, p := range paths {
		b, err := fs.ReadFile(h.FS, p)
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
	}
	return ""
}

// osImage is os-release's PRETTY_NAME, "Linux" when there is none (as
// cAdvisor reports it).
func (h Host) osImage() string {
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := fs.ReadFile(h.FS, p)
		if err != nil {
			continue
		}
		if name := osReleaseValue(b, "PRETTY_NAME"); name != "" {
			return name
		}
	}
	return "Linux"
}

func osReleaseValue(b []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k != key {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			return uq
		}
		return strings.Trim(v, `"'`)
	}
	return ""
}

// parseMeminfo returns the /proc/meminfo values in bytes.
func parseMeminfo(b []byte) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		out[k] = v
	}
	return out
}

// countCPUList counts the CPUs of a kernel CPU list such as "0-3,6,8-9".
func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if b < a {
			return 0, fmt.Errorf("cpu list %q: range %q runs backwards", s, part)
		}
		n += b - a + 1
	}
	return n, nil
}

const hugePagesDir = "sys/kernel/mm/hugepages"

// hugePages reads /sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages.
// A kernel without huge page support has no such directory: no pages.
func (h Host) hugePages() (map[string]int64, error) {
	out := map[string]int64{}
	entries, err := fs.ReadDir(h.FS, hugePagesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("reading /%s: %w", hugePagesDir, err)
	}
	for _, e := range entries {
		name := e.Name()
		kb, ok := strings.CutPrefix(name, "hugepages-")
		if !ok {
			continue
		}
		kb, ok = strings.CutSuffix(kb, "kB")
		if !ok {
			continue
		}
		sizeKB, err := strconv.ParseInt(kb, 10, 64)
		if err != nil {
			continue
		}
		b, err := fs.ReadFile(h.FS, path.Join(hugePagesDir, name, "nr_hugepages"))
		if err != nil {
			return out, fmt.Errorf("reading the huge pages of size %skB: %w", kb, err)
		}
		count, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return out, fmt.Errorf("parsing the huge pages of size %skB: %w", kb, err)
		}
		out[HugePageSizeName(sizeKB*1024)] = sizeKB * 1024 * count
	}
	return out, nil
}

// HugePageSizeName is the name of a huge page size as used in resource
// names: 2097152 → "2Mi".
func HugePageSizeName(pageBytes int64) string {
	return resource.NewQuantity(pageBytes, resource.BinarySI).String()
}

func unameRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

// statfsCapacity is the filesystem size as cAdvisor measures it: fragment
// size times blocks.
func statfsCapacity(p string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", p, err)
	}
	return int64(st.Frsize) * int64(st.Blocks), nil
}
