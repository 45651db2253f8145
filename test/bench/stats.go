package main

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

// dist summarises a set of durations.
type dist struct {
	N                     int
	Min, Median, P90, Max time.Duration
	Samples               []time.Duration `json:",omitempty"`
}

// percentile interpolates linearly between closest ranks (numpy's default).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	pos := p * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return sorted[lo] + time.Duration(frac*float64(sorted[hi]-sorted[lo]))
}

func summarize(samples []time.Duration) dist {
	if len(samples) == 0 {
		return dist{}
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return dist{N: len(s), Min: s[0], Median: percentile(s, 0.5), P90: percentile(s, 0.9), Max: s[len(s)-1], Samples: samples}
}

func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// medP90 formats "median / p90 ms".
func (d dist) medP90() string {
	if d.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s", ms(d.Median), ms(d.P90))
}

func (d dist) med() string {
	if d.N == 0 {
		return "–"
	}
	return ms(d.Median)
}

// logSummary counts klog error and warning lines of a kubelet log and
// keeps the most frequent distinct ones (by source location and message).
type logSummary struct {
	Path     string
	Lines    int
	Errors   int
	Warnings int
	Top      []logLine
}

type logLine struct {
	Severity string
	Count    int
	Text     string
}

var klogHeader = regexp.MustCompile(`^([EW])\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ (.*)$`)

// Identifiers that differ per occurrence, so identical messages group.
var volatile = regexp.MustCompile(`[0-9a-f]{64}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|bench-mem-\d+|bench-start-\d+|\d+(\.\d+)?(ms|s|µs)`)

func summarizeLog(path string) logSummary {
	s := logSummary{Path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return s
	}
	counts := map[string]*logLine{}
	var order []string
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		s.Lines++
		m := klogHeader.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] == "E" {
			s.Errors++
		} else {
			s.Warnings++
		}
		text := volatile.ReplaceAllString(m[2], "…")
		if len(text) > 300 {
			text = text[:300] + "…"
		}
		key := m[1] + text
		if l, ok := counts[key]; ok {
			l.Count++
			continue
		}
		counts[key] = &logLine{Severity: m[1], Count: 1, Text: text}
		order = append(order, key)
	}
	for _, k := range order {
		s.Top = append(s.Top, *counts[k])
	}
	sort.SliceStable(s.Top, func(i, j int) bool {
		if s.Top[i].Severity != s.Top[j].Severity {
			return s.Top[i].Severity < s.Top[j].Severity // errors first
		}
		return s.Top[i].Count > s.Top[j].Count
	})
	if len(s.Top) > 8 {
		s.Top = s.Top[:8]
	}
	return s
}

// machine describes where the benchmark ran.
type machine struct {
	CPUs       int
	CPUModel   string
	MemTotal   string
	Kernel     string
	Cgroup     string
	Runtime    string
	GoVersion  string
	LoadBefore string
	LoadAfter  string
}

func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadavg()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.Index(l, ":"); i >= 0 {
					m.CPUModel = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				m.MemTotal = strings.Join(strings.Fields(l)[1:], " ")
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	m.Cgroup = "v1"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		m.Cgroup = "v2"
	}
	return m
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
