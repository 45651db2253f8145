package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// userHZ is the unit of the tick counts in /proc/stat (USER_HZ is 100 on
// every Linux architecture the kubelet runs on).
const userHZ = 100

// defaultInterface is the interface upstream reports as a pod's or the
// node's default one.
const defaultInterface = "eth0"

// netDevice is one row of /proc/net/dev.
type netDevice struct {
	Name                               string
	RxBytes, RxErrors, TxBytes, TxErrs uint64
}

// parseNetDev reads /proc/net/dev (or /proc/<pid>/net/dev).
func parseNetDev(data []byte) ([]netDevice, error) {
	var out []netDevice
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue // the two header lines
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, fmt.Errorf("net/dev: %d fields for %q", len(f), strings.TrimSpace(name))
		}
		var n [4]uint64
		for i, col := range []int{0, 2, 8, 10} { // rx bytes, rx errs, tx bytes, tx errs
			v, err := strconv.ParseUint(f[col], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("net/dev %q: %w", strings.TrimSpace(name), err)
			}
			n[i] = v
		}
		out = append(out, netDevice{Name: strings.TrimSpace(name), RxBytes: n[0], RxErrors: n[1], TxBytes: n[2], TxErrs: n[3]})
	}
	return out, nil
}

// ignoredDevice reports interfaces left out of network stats, as cAdvisor
// does: loopback, the host ends of veth pairs, and docker/nerdctl bridges.
func ignoredDevice(name string) bool {
	for _, p := range []string{"lo", "veth", "docker", "nerdctl"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// networkStats turns net/dev rows into NetworkStats: every interface that is
// not ignored, and as the default the one named eth0 or, failing that,
// fallbackDefault (the node's default-route interface). Nil when no
// interface is left.
func networkStats(devs []netDevice, fallbackDefault string, t time.Time) *statsapi.NetworkStats {
	ns := &statsapi.NetworkStats{Time: metav1.NewTime(t)}
	var fallback *statsapi.InterfaceStats
	haveDefault := false
	for _, d := range devs {
		if ignoredDevice(d.Name) {
			continue
		}
		is := statsapi.InterfaceStats{Name: d.Name, RxBytes: u64(d.RxBytes), RxErrors: u64(d.RxErrors), TxBytes: u64(d.TxBytes), TxErrors: u64(d.TxErrs)}
		ns.Interfaces = append(ns.Interfaces, is)
		switch {
		case d.Name == defaultInterface:
			ns.InterfaceStats = is
			haveDefault = true
		case fallbackDefault != "" && d.Name == fallbackDefault:
			cp := is
			fallback = &cp
		}
	}
	if len(ns.Interfaces) == 0 {
		return nil
	}
	if !haveDefault && fallback != nil {
		ns.InterfaceStats = *fallback
	}
	return ns
}

// parseDefaultRoute returns the interface of the IPv4 default route in
// /proc/net/route, or "".
func parseDefaultRoute(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			return f[0]
		}
	}
	return ""
}

// procStat is what the Summary needs from /proc/stat.
type procStat struct {
	// BusyNanos is CPU time spent outside idle, iowait and steal, in ns.
	BusyNanos uint64
	// BootTime is the btime line.
	BootTime time.Time
}

// parseProcStat reads the aggregate cpu line and btime from /proc/stat.
func parseProcStat(data []byte) (procStat, error) {
	var ps procStat
	var haveCPU, haveBoot bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "cpu":
			// user nice system idle iowait irq softirq steal ...
			if len(f) < 8 {
				return ps, fmt.Errorf("proc/stat: short cpu line %q", sc.Text())
			}
			var ticks uint64
			for _, col := range []int{1, 2, 3, 6, 7} {
				v, err := strconv.ParseUint(f[col], 10, 64)
				if err != nil {
					return ps, fmt.Errorf("proc/stat cpu: %w", err)
				}
				ticks += v
			}
			ps.BusyNanos = ticks * uint64(time.Second/userHZ)
			haveCPU = true
		case "btime":
			if len(f) < 2 {
				return ps, errors.New("proc/stat: empty btime")
			}
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return ps, fmt.Errorf("proc/stat btime: %w", err)
			}
			ps.BootTime = time.Unix(v, 0)
			haveBoot = true
		}
	}
	if !haveCPU || !haveBoot {
		return ps, errors.New("proc/stat: cpu or btime line missing")
	}
	return ps, nil
}

// parseLoadavgTasks returns the total task count of /proc/loadavg
// ("0.1 0.2 0.3 2/345 678" gives 345).
func parseLoadavgTasks(data []byte) (int64, error) {
	f := strings.Fields(string(data))
	if len(f) < 4 {
		return 0, fmt.Errorf("loadavg: %d fields", len(f))
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("loadavg: bad task field %q", f[3])
	}
	return strconv.ParseInt(total, 10, 64)
}

func u64(v uint64) *uint64 { return &v }
