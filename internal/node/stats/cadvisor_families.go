package stats

import (
	"time"
)

// The /metrics/cadvisor families, named, typed and described as cAdvisor
// v0.56 (the upstream v1.36 kubelet's) with the metric sets that kubelet
// enables: CPU usage and load, memory, disk usage and I/O, network, app,
// process and OOM metrics. Sorted by name, as client_golang writes them.

const (
	gauge   = "gauge"
	counter = "counter"
)

// cadvisorFamily is one metric family: a writer of its series given the
// per-entry label sets.
type cadvisorFamily struct {
	Name, Help, Type string
	Write            func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels)
}

// entryLabels holds the base labels of each entry (container, id, image,
// name, namespace, pod: the upstream kubelet's label function), rendered
// once per scrape as the text between the braces, and scratch space for
// merging extra labels in.
type entryLabels struct {
	base     [][]label
	rendered [][]byte
	scratch  []label
	buf      []byte
}

func newEntryLabels(es []cadvisorEntry) *entryLabels {
	ls := &entryLabels{base: make([][]label, len(es)), rendered: make([][]byte, len(es)), scratch: make([]label, 0, 10)}
	// All entries' labels in two allocations: one array of label pairs,
	// one buffer of their renderings.
	const perEntry = 6
	all := make([]label, len(es)*perEntry)
	size := 0
	for i, e := range es {
		base := all[i*perEntry : (i+1)*perEntry : (i+1)*perEntry]
		base[0], base[1], base[2] = label{"container", escapeValue(e.Container)}, label{"id", escapeValue(e.ID)}, label{"image", escapeValue(e.Image)}
		base[3], base[4], base[5] = label{"name", escapeValue(e.Name)}, label{"namespace", escapeValue(e.Namespace)}, label{"pod", escapeValue(e.Pod)}
		ls.base[i] = base
		for _, l := range base {
			size += len(l.Name) + len(l.Value) + 4 // name="value",
		}
	}
	buf := make([]byte, 0, size)
	for i := range es {
		start := len(buf)
		buf = appendLabels(buf, ls.base[i])
		ls.rendered[i] = buf[start:len(buf):len(buf)]
	}
	return ls
}

// with returns entry i's labels, rendered, with extra (sorted) merged in;
// valid until the next call.
func (ls *entryLabels) with(i int, extra ...label) []byte {
	if len(extra) == 0 {
		return ls.rendered[i]
	}
	ls.scratch = mergeLabels(ls.scratch, ls.base[i], extra)
	ls.buf = appendLabels(ls.buf[:0], ls.scratch)
	return ls.buf
}

func millis(t time.Time) int64 { return t.UnixMilli() }

// perCgroup is a family with one series per entry whose controller was
// read, stamped with the read time.
func perCgroup(name, help, typ string, memory bool, v func(c *cgroupFull) float64) cadvisorFamily {
	return cadvisorFamily{Name: name, Help: help, Type: typ, Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
		for i := range s.Entries {
			c := &s.Cgroups[i]
			if (memory && !c.HasMemory) || (!memory && !c.HasCPU) {
				continue
			}
			x.seriesRendered(f.Name, ls.with(i), v(c), millis(c.Time))
		}
	}}
}

func cpuFamily(name, help, typ string, v func(c *cgroupFull) float64) cadvisorFamily {
	return perCgroup(name, help, typ, false, v)
}

func memFamily(name, help, typ string, v func(c *cgroupFull) float64) cadvisorFamily {
	return perCgroup(name, help, typ, true, v)
}

// cfsFamily is written for cgroups with a CFS quota only, as cAdvisor's.
func cfsFamily(name, help string, v func(c *cgroupFull) float64) cadvisorFamily {
	return cadvisorFamily{Name: name, Help: help, Type: counter, Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
		for i := range s.Entries {
			c := &s.Cgroups[i]
			if c.HasCPU && c.Spec.CPUQuota != 0 {
				x.seriesRendered(f.Name, ls.with(i), v(c), millis(c.Time))
			}
		}
	}}
}

// everyEntry writes one series per entry.
func everyEntry(name, help, typ string, stamp bool, v func(s *cadvisorScrape, i int) float64) cadvisorFamily {
	return cadvisorFamily{Name: name, Help: help, Type: typ, Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
		for i := range s.Entries {
			var ts int64
			if stamp {
				ts = millis(s.Cgroups[i].Time)
			}
			x.seriesRendered(f.Name, ls.with(i), v(s, i), ts)
		}
	}}
}

// specFamily writes a container_spec_* series (no timestamp) where cond holds.
func specFamily(name, help string, cond func(c *cgroupFull) bool, v func(c *cgroupFull) float64) cadvisorFamily {
	return cadvisorFamily{Name: name, Help: help, Type: gauge, Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
		for i := range s.Entries {
			c := &s.Cgroups[i]
			if cond(c) {
				x.seriesRendered(f.Name, ls.with(i), v(c), 0)
			}
		}
	}}
}

// netFamily writes one series per interface of entries with a network.
func netFamily(name, help string, v func(d *netDeviceFull) uint64) cadvisorFamily {
	return cadvisorFamily{Name: name, Help: help, Type: counter, Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
		for i := range s.Entries {
			for j := range s.Networks[i] {
				d := &s.Networks[i][j]
				x.seriesRendered(f.Name, ls.with(i, label{"interface", escapeValue(d.Name)}), float64(v(d)), millis(s.Cgroups[i].Time))
			}
		}
	}}
}

// rootFsFamily writes one series per filesystem of the root entry.
func rootFsFamily(name, help, typ string, v func(fs *rootFilesystem) float64) cadvisorFamily {
	return cadvisorFamily{Name: name, Help: help, Type: typ, Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
		for i, e := range s.Entries {
			if !e.Root {
				continue
			}
			for j := range s.RootFs {
				fs := &s.RootFs[j]
				x.seriesRendered(f.Name, ls.with(i, label{"device", escapeValue(fs.Device)}), v(fs), millis(s.Cgroups[i].Time))
			}
		}
	}}
}

func ns(v uint64) float64 { return float64(v) / float64(time.Second) }

// memoryFailures writes pgfault and pgmajfault for both scopes; cAdvisor
// reports the cgroup's own counters as both.
func memoryFailures() cadvisorFamily {
	return cadvisorFamily{Name: "container_memory_failures_total", Help: "Cumulative count of memory allocation failures.", Type: counter,
		Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
			for i := range s.Entries {
				c := &s.Cgroups[i]
				if !c.HasMemory {
					continue
				}
				for _, ft := range []struct {
					name string
					v    uint64
				}{{"pgfault", c.PgFault}, {"pgmajfault", c.PgMajFault}} {
					for _, scope := range []string{"container", "hierarchy"} {
						x.seriesRendered(f.Name, ls.with(i, label{"failure_type", ft.name}, label{"scope", scope}), float64(ft.v), millis(c.Time))
					}
				}
			}
		}}
}

// tasksState: cAdvisor's task states come from its netlink load reader,
// which the kubelet never enables, so every state reads zero there too.
func tasksState() cadvisorFamily {
	return cadvisorFamily{Name: "container_tasks_state", Help: "Number of tasks in given state", Type: gauge,
		Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
			for i := range s.Entries {
				for _, st := range []string{"iowaiting", "running", "sleeping", "stopped", "uninterruptible"} {
					x.seriesRendered(f.Name, ls.with(i, label{"state", st}), 0, millis(s.Cgroups[i].Time))
				}
			}
		}}
}

func cpuUsage() cadvisorFamily {
	return cadvisorFamily{Name: "container_cpu_usage_seconds_total", Help: "Cumulative cpu time consumed in seconds.", Type: counter,
		Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
			for i := range s.Entries {
				c := &s.Cgroups[i]
				if c.HasCPU && c.CPUTotal > 0 {
					x.seriesRendered(f.Name, ls.with(i, label{"cpu", "total"}), ns(c.CPUTotal), millis(c.Time))
				}
			}
		}}
}

func ulimits() cadvisorFamily {
	return cadvisorFamily{Name: "container_ulimits_soft", Help: "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice", Type: gauge,
		Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
			for i, e := range s.Entries {
				if e.Root && s.Ulimit != 0 {
					x.seriesRendered(f.Name, ls.with(i, label{"ulimit", "max_open_files"}), float64(s.Ulimit), millis(s.Cgroups[i].Time))
				}
			}
		}}
}

// scrapeError is container_scrape_error: 1 when the containers could not
// be listed.
func scrapeError() cadvisorFamily {
	return cadvisorFamily{Name: "container_scrape_error", Help: "1 if there was an error while getting container metrics, 0 otherwise", Type: gauge,
		Write: func(x *expoWriter, f *cadvisorFamily, s *cadvisorScrape, ls *entryLabels) {
			v := 0.0
			if s.Err {
				v = 1
			}
			x.series(f.Name, nil, v, 0)
		}}
}

var cadvisorFamilies = []cadvisorFamily{
	cfsFamily("container_cpu_cfs_burst_periods_total", "Number of periods when burst occurs.", func(c *cgroupFull) float64 { return float64(c.CFSBursts) }),
	cfsFamily("container_cpu_cfs_burst_seconds_total", "Total time duration the container has been bursted.", func(c *cgroupFull) float64 { return ns(c.CFSBurstNanos) }),
	cfsFamily("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", func(c *cgroupFull) float64 { return float64(c.CFSPeriods) }),
	cfsFamily("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", func(c *cgroupFull) float64 { return float64(c.CFSThrottled) }),
	cfsFamily("container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", func(c *cgroupFull) float64 { return ns(c.CFSThrottledNanos) }),
	// The load average comes from cAdvisor's load reader, off in the kubelet: zero.
	everyEntry("container_cpu_load_average_10s", "Value of container cpu load average over the last 10 seconds.", gauge, true, func(*cadvisorScrape, int) float64 { return 0 }),
	everyEntry("container_cpu_load_d_average_10s", "Value of container cpu load.d average over the last 10 seconds.", gauge, true, func(*cadvisorScrape, int) float64 { return 0 }),
	cpuFamily("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter, func(c *cgroupFull) float64 { return ns(c.CPUSystem) }),
	cpuUsage(),
	cpuFamily("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter, func(c *cgroupFull) float64 { return ns(c.CPUUser) }),
	everyEntry("container_file_descriptors", "Number of open file descriptors for the container.", gauge, true, func(s *cadvisorScrape, i int) float64 { return float64(s.Procs[i].FDs) }),
	rootFsFamily("container_fs_inodes_free", "Number of available Inodes", gauge, func(fs *rootFilesystem) float64 { return float64(fs.InodesFree) }),
	rootFsFamily("container_fs_inodes_total", "Number of Inodes", gauge, func(fs *rootFilesystem) float64 { return float64(fs.Inodes) }),
	rootFsFamily("container_fs_io_current", "Number of I/Os currently in progress", gauge, func(fs *rootFilesystem) float64 { return float64(fs.Disk.IOInProgress) }),
	rootFsFamily("container_fs_io_time_seconds_total", "Cumulative count of seconds spent doing I/Os", counter, func(fs *rootFilesystem) float64 { return msSeconds(fs.Disk.IOMillis) }),
	rootFsFamily("container_fs_io_time_weighted_seconds_total", "Cumulative weighted I/O time in seconds", counter, func(fs *rootFilesystem) float64 { return msSeconds(fs.Disk.WeightedIOMillis) }),
	rootFsFamily("container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge, func(fs *rootFilesystem) float64 { return float64(fs.Capacity) }),
	rootFsFamily("container_fs_read_seconds_total", "Cumulative count of seconds spent reading", counter, func(fs *rootFilesystem) float64 { return msSeconds(fs.Disk.ReadMillis) }),
	rootFsFamily("container_fs_reads_merged_total", "Cumulative count of reads merged", counter, func(fs *rootFilesystem) float64 { return float64(fs.Disk.ReadsMerged) }),
	rootFsFamily("container_fs_reads_total", "Cumulative count of reads completed", counter, func(fs *rootFilesystem) float64 { return float64(fs.Disk.Reads) }),
	rootFsFamily("container_fs_sector_reads_total", "Cumulative count of sector reads completed", counter, func(fs *rootFilesystem) float64 { return float64(fs.Disk.SectorsRead) }),
	rootFsFamily("container_fs_sector_writes_total", "Cumulative count of sector writes completed", counter, func(fs *rootFilesystem) float64 { return float64(fs.Disk.SectorsWritten) }),
	rootFsFamily("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge, func(fs *rootFilesystem) float64 { return float64(fs.Used) }),
	rootFsFamily("container_fs_write_seconds_total", "Cumulative count of seconds spent writing", counter, func(fs *rootFilesystem) float64 { return msSeconds(fs.Disk.WriteMillis) }),
	rootFsFamily("container_fs_writes_merged_total", "Cumulative count of writes merged", counter, func(fs *rootFilesystem) float64 { return float64(fs.Disk.WritesMerged) }),
	rootFsFamily("container_fs_writes_total", "Cumulative count of writes completed", counter, func(fs *rootFilesystem) float64 { return float64(fs.Disk.Writes) }),
	// CRI runtimes run no image health checks: cAdvisor's "none defined".
	everyEntry("container_health_state", "The result of the container's health check", gauge, true, func(*cadvisorScrape, int) float64 { return -1 }),
	everyEntry("container_last_seen", "Last time a container was seen by the exporter", gauge, false, func(s *cadvisorScrape, _ int) float64 { return float64(s.Now.Unix()) }),
	memFamily("container_memory_cache", "Number of bytes of page cache memory.", gauge, func(c *cgroupFull) float64 { return float64(c.MemCache) }),
	memFamily("container_memory_failcnt", "Number of memory usage hits limits", counter, func(c *cgroupFull) float64 { return float64(c.MemFailcnt) }),
	memoryFailures(),
	memFamily("container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.MemKernel) }),
	memFamily("container_memory_mapped_file", "Size of memory mapped files in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.MemMappedFile) }),
	memFamily("container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", gauge, func(c *cgroupFull) float64 { return float64(c.MemMaxUsage) }),
	memFamily("container_memory_rss", "Size of RSS in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.MemRSS) }),
	memFamily("container_memory_swap", "Container swap usage in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.MemSwap) }),
	memFamily("container_memory_total_active_file_bytes", "Current total active file in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.ActiveFile) }),
	memFamily("container_memory_total_inactive_file_bytes", "Current total inactive file in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.InactiveFile) }),
	memFamily("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge, func(c *cgroupFull) float64 { return float64(c.MemUsage) }),
	memFamily("container_memory_working_set_bytes", "Current working set in bytes.", gauge, func(c *cgroupFull) float64 { return float64(c.WorkingSet()) }),
	netFamily("container_network_receive_bytes_total", "Cumulative count of bytes received", func(d *netDeviceFull) uint64 { return d.RxBytes }),
	netFamily("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", func(d *netDeviceFull) uint64 { return d.RxErrors }),
	netFamily("container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", func(d *netDeviceFull) uint64 { return d.RxDropped }),
	netFamily("container_network_receive_packets_total", "Cumulative count of packets received", func(d *netDeviceFull) uint64 { return d.RxPackets }),
	netFamily("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", func(d *netDeviceFull) uint64 { return d.TxBytes }),
	netFamily("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", func(d *netDeviceFull) uint64 { return d.TxErrors }),
	netFamily("container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", func(d *netDeviceFull) uint64 { return d.TxDropped }),
	netFamily("container_network_transmit_packets_total", "Cumulative count of packets transmitted", func(d *netDeviceFull) uint64 { return d.TxPackets }),
	memFamily("container_oom_events_total", "Count of out of memory events observed for the container", counter, func(c *cgroupFull) float64 { return float64(c.OOMKills) }),
	everyEntry("container_processes", "Number of processes running inside the container.", gauge, true, func(s *cadvisorScrape, i int) float64 { return float64(s.Procs[i].Processes) }),
	scrapeError(),
	everyEntry("container_sockets", "Number of open sockets for the container.", gauge, true, func(s *cadvisorScrape, i int) float64 { return float64(s.Procs[i].Sockets) }),
	specFamily("container_spec_cpu_period", "CPU period of the container.", func(c *cgroupFull) bool { return c.HasCPU }, func(c *cgroupFull) float64 { return float64(c.Spec.CPUPeriod) }),
	specFamily("container_spec_cpu_quota", "CPU quota of the container.", func(c *cgroupFull) bool { return c.HasCPU && c.Spec.CPUQuota != 0 }, func(c *cgroupFull) float64 { return float64(c.Spec.CPUQuota) }),
	specFamily("container_spec_cpu_shares", "CPU share of the container.", func(c *cgroupFull) bool { return c.HasCPU }, func(c *cgroupFull) float64 { return float64(c.Spec.CPUShares) }),
	specFamily("container_spec_memory_limit_bytes", "Memory limit for the container.", func(c *cgroupFull) bool { return c.HasMemory }, func(c *cgroupFull) float64 { return float64(c.Spec.MemLimit) }),
	specFamily("container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.", func(c *cgroupFull) bool { return c.HasMemory }, func(c *cgroupFull) float64 { return float64(c.Spec.MemReservation) }),
	specFamily("container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", func(c *cgroupFull) bool { return c.HasMemory }, func(c *cgroupFull) float64 { return float64(c.Spec.MemSwapLimit) }),
	specFamily("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", func(*cgroupFull) bool { return true }, func(c *cgroupFull) float64 { return float64(c.Spec.Created.Unix()) }),
	tasksState(),
	everyEntry("container_threads", "Number of threads running inside the container", gauge, true, func(s *cadvisorScrape, i int) float64 { return float64(s.Cgroups[i].Threads) }),
	everyEntry("container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", gauge, true, func(s *cadvisorScrape, i int) float64 { return float64(s.Cgroups[i].Spec.ThreadsMax) }),
	ulimits(),
}

func msSeconds(ms uint64) float64 { return float64(ms) / 1000 }

// writeCadvisor writes the whole /metrics/cadvisor body.
func writeCadvisor(x *expoWriter, s *cadvisorScrape, m Machine) {
	x.header("cadvisor_version_info", "A metric with a constant '1' value labeled by kernel version, OS version, docker version, cadvisor version & cadvisor revision.", gauge)
	x.series("cadvisor_version_info", []label{
		{"cadvisorRevision", ""}, {"cadvisorVersion", ""}, {"dockerVersion", ""},
		{"kernelVersion", escapeValue(m.KernelVersion)}, {"osVersion", escapeValue(m.OSImage)},
	}, 1, 0)
	ls := newEntryLabels(s.Entries)
	for i := range cadvisorFamilies {
		f := &cadvisorFamilies[i]
		x.header(f.Name, f.Help, f.Type)
		f.Write(x, f, s, ls)
	}
	writeMachine(x, m)
}

// writeMachine writes the machine_* families (cAdvisor's machine collector).
func writeMachine(x *expoWriter, m Machine) {
	base := []label{{"boot_id", escapeValue(m.BootID)}, {"machine_id", escapeValue(m.MachineID)}, {"system_uuid", escapeValue(m.SystemUUID)}}
	one := func(name, help string, v float64) {
		x.header(name, help, gauge)
		x.series(name, base, v, 0)
	}
	// Books and drawers exist on s390x only; NVM needs Intel's ipmctl library.
	one("machine_cpu_books", "Number of CPU books.", 0)
	one("machine_cpu_cores", "Number of logical CPU cores.", float64(m.Cores))
	one("machine_cpu_drawers", "Number of CPU drawers.", 0)
	one("machine_cpu_physical_cores", "Number of physical CPU cores.", float64(m.PhysicalCores))
	one("machine_cpu_sockets", "Number of CPU sockets.", float64(m.Sockets))
	one("machine_memory_bytes", "Amount of memory installed on the machine.", float64(m.MemoryBytes))
	one("machine_nvm_avg_power_budget_watts", "NVM power budget.", 0)
	x.header("machine_nvm_capacity", "NVM capacity value labeled by NVM mode (memory mode or app direct mode).", gauge)
	for _, mode := range []string{"app_direct_mode", "memory_mode"} {
		x.series("machine_nvm_capacity", []label{base[0], base[1], {"mode", mode}, base[2]}, 0, 0)
	}
	x.header("machine_scrape_error", "1 if there was an error while getting machine metrics, 0 otherwise.", gauge)
	x.series("machine_scrape_error", nil, 0, 0)
	one("machine_swap_bytes", "Amount of swap memory available on the machine.", float64(m.SwapBytes))
}
