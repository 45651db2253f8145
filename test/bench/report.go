package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func mib(kB int64) string {
	if kB == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(kB)/1024)
}

func mibBytes(b int64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

func cpuPct(used, over time.Duration) string {
	if over == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(used)/float64(over))
}

// markdown renders the results: one table, ours vs upstream vs raw CRI,
// then the logs' errors and warnings.
func markdown(res *results) string {
	var b strings.Builder
	m := res.Machine
	fmt.Fprintf(&b, "## Kubelet benchmark, %s\n\n", res.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- machine: %d CPUs (%s), %s RAM, kernel %s, cgroup %s; load average before %s, after %s\n",
		m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.Cgroup, m.LoadBefore, m.LoadAfter)
	priv := ""
	if res.Private {
		priv = ", private to the benchmark"
	}
	fmt.Fprintf(&b, "- runtime: %s at %s%s; image %s; benchmark built with %s\n", m.Runtime, res.Endpoint, priv, res.Image, m.GoVersion)
	byName := map[string]*flavorResult{}
	for _, f := range res.Flavors {
		byName[f.Name] = f
		src := ""
		if f.Source != "" {
			src = ", built from " + f.Source
		}
		fmt.Fprintf(&b, "- %s: `%s`%s\n", f.Name, f.Version, src)
	}
	b.WriteString("\nTimes in ms as `median / p90` over the measured runs (pollers every 10 ms, so ±10 ms; " +
		"the split by call comes from containerd's log, its own timestamps of each CRI call beginning and returning; " +
		"raw CRI times are measured by the client).\n\n")
	b.WriteString("| Metric | ours | upstream | raw CRI |\n|---|---|---|---|\n")

	cols := func(f func(*flavorResult) string) (string, string) {
		get := func(name string) string {
			fr := byName[name]
			if fr == nil {
				return "–"
			}
			return f(fr)
		}
		return get("ours"), get("upstream")
	}
	row := func(metric string, f func(*flavorResult) string, raw string) {
		o, u := cols(f)
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", metric, o, u, raw)
	}
	start := func(f func(*startResult) string) func(*flavorResult) string {
		return func(fr *flavorResult) string {
			if fr.Start == nil || len(fr.Start.Runs) == 0 {
				return "–"
			}
			return f(fr.Start)
		}
	}
	mem := func(f func(*memResult) string) func(*flavorResult) string {
		return func(fr *flavorResult) string {
			if fr.Mem == nil || fr.Mem.RSSkB == 0 {
				return "–"
			}
			return f(fr.Mem)
		}
	}
	rawTotal, rawSeen, rawSandboxCreate, rawStart := "–", "–", "–", "–"
	if r := res.Raw; r != nil && r.Total.N > 0 {
		rawTotal = fmt.Sprintf("%s (the three calls' round trips)", r.Total.medP90())
		rawSeen = fmt.Sprintf("%s (n=%d)", r.Seen.medP90(), r.Seen.N)
		rawSandboxCreate = fmt.Sprintf("%s (RunPodSandbox %s + CreateContainer %s)", r.SandboxCreate.medP90(), r.Sandbox.med(), r.Create.med())
		rawStart = r.Start.medP90()
	}
	n := res.Runs
	row(fmt.Sprintf("**Pod start → container RUNNING in CRI** (n=%d)", n), start(func(s *startResult) string { return "**" + s.CRIRunning.medP90() + "**" }), "**"+rawSeen+"**")
	row(fmt.Sprintf("**Pod start → Running in /pods** (n=%d)", n), start(func(s *startResult) string { return "**" + s.PodsRunning.medP90() + "**" }), "–")
	fromLog := false
	for _, f := range res.Flavors {
		if f.Start != nil && f.Start.InKubelet.N > 0 {
			fromLog = true
		}
	}
	if fromLog {
		rawSandbox, rawCreate := "–", "–"
		if r := res.Raw; r != nil && r.Total.N > 0 {
			rawSandbox, rawCreate = r.Sandbox.medP90(), r.Create.medP90()
		}
		row("… in the kubelet: manifest → RunPodSandbox, and between the calls", start(func(s *startResult) string { return s.InKubelet.medP90() }), "–")
		row("… in the runtime: RunPodSandbox + CreateContainer + StartContainer", start(func(s *startResult) string { return s.InRuntime.medP90() }), rawTotal)
		row("… … manifest renamed → RunPodSandbox begins", start(func(s *startResult) string { return s.Reaction.medP90() }), "–")
		row("… … RunPodSandbox", start(func(s *startResult) string { return s.SandboxCall.medP90() }), rawSandbox)
		row("… … RunPodSandbox returned → CreateContainer begins", start(func(s *startResult) string { return s.SandboxToCreate.medP90() }), "–")
		row("… … CreateContainer", start(func(s *startResult) string { return s.CreateCall.medP90() }), rawCreate)
		row("… … CreateContainer returned → StartContainer begins", start(func(s *startResult) string { return s.CreateToStart2.medP90() }), "–")
		row("… … StartContainer", start(func(s *startResult) string { return s.StartCall.medP90() }), rawStart)
		row("… … StartContainer returned → Running in /pods", start(func(s *startResult) string { return s.StartToPods.medP90() }), "–")
	} else {
		row("… manifest → sandbox CreatedAt (≈ RunPodSandbox called)", start(func(s *startResult) string { return s.SandboxCreated.medP90() }), "–")
		row("… sandbox CreatedAt → container CreatedAt (≈ CreateContainer returned)", start(func(s *startResult) string { return s.SandboxToContainer.medP90() }), rawSandboxCreate)
		row("… container CreatedAt → StartedAt (≈ StartContainer returned)", start(func(s *startResult) string { return s.CreateToStart.medP90() }), rawStart)
		row("… CRI RUNNING → /pods Running (status lag)", start(func(s *startResult) string { return s.StatusLag.medP90() }), "–")
	}
	row("First pod after start-up (warm-up, per block): /pods Running", start(func(s *startResult) string {
		var v []string
		for _, w := range s.Warmups {
			v = append(v, ms(w.PodsRunning))
		}
		return strings.Join(v, ", ")
	}), "–")
	row("Manifest removed → container stopped (grace 0)", start(func(s *startResult) string { return s.StopCRI.medP90() }), "–")
	row("Manifest removed → pod gone from /pods, sandbox stopped", start(func(s *startResult) string { return s.StopGone.medP90() }), "–")
	row("Process start → healthy (/healthz ok, /pods answers), per block", start(func(s *startResult) string {
		var v []string
		for _, h := range s.Healthy {
			v = append(v, ms(h))
		}
		return strings.Join(v, ", ")
	}), "–")
	row("VmRSS, no pods (2 s after healthy): total (anon + file)", start(func(s *startResult) string {
		return fmt.Sprintf("%s (%s + %s)", mib(s.IdleRSSkB), mib(s.IdleAnonkB), mib(s.IdleFilekB))
	}), "–")
	pods := 0
	for _, f := range res.Flavors {
		if f.Mem != nil {
			pods = f.Mem.Pods
		}
	}
	if pods > 0 {
		row(fmt.Sprintf("**%d pods: process start → all Running in /pods**", pods), mem(func(m *memResult) string { return "**" + ms(m.AllRunning) + "**" }), "–")
		row(fmt.Sprintf("%d pods: CPU time from start to all Running", pods), mem(func(m *memResult) string { return ms(m.StartCPU) }), "–")
		row(fmt.Sprintf("**%d pods: VmRSS after settling** (anon + file)", pods), mem(func(m *memResult) string {
			return fmt.Sprintf("**%s** (%s + %s)", mib(m.RSSkB), mib(m.AnonkB), mib(m.FilekB))
		}), "–")
		row(fmt.Sprintf("%d pods: VmHWM (peak RSS)", pods), mem(func(m *memResult) string { return mib(m.HWMkB) }), "–")
		row(fmt.Sprintf("%d pods: threads", pods), mem(func(m *memResult) string { return fmt.Sprint(m.Threads) }), "–")
		row(fmt.Sprintf("%d pods: CPU while idle (of one core)", pods), mem(func(m *memResult) string { return cpuPct(m.IdleCPU, m.Settle) }), "–")
		row(fmt.Sprintf("%d pods: all manifests removed → all gone", pods), mem(func(m *memResult) string { return ms(m.StopAll) }), "–")
	}
	scrape := func(f func(*scrapeResult) string) func(*flavorResult) string {
		return func(fr *flavorResult) string {
			if fr.Scrape == nil || fr.Scrape.BusyCPU == 0 {
				return "–"
			}
			return f(fr.Scrape)
		}
	}
	pods = 0
	for _, f := range res.Flavors {
		if f.Scrape != nil {
			pods = f.Scrape.Pods
		}
	}
	if pods > 0 {
		row(fmt.Sprintf("**%d pods: CPU per /metrics/cadvisor scrape** (less idle CPU)", pods), scrape(func(s *scrapeResult) string {
			return fmt.Sprintf("**%.1f ms** (%d scrapes %v apart)", float64(s.PerScrape.Microseconds())/1000, s.Scrapes*s.Rounds, s.Interval)
		}), "–")
		row(fmt.Sprintf("%d pods: CPU per scrape, measured around each (all threads' schedstat; median / p90)", pods), scrape(func(s *scrapeResult) string {
			return s.Direct.medP90()
		}), "–")
		row(fmt.Sprintf("**%d pods: allocations per scrape** (go_memstats on /metrics, less idle)", pods), scrape(func(s *scrapeResult) string {
			return fmt.Sprintf("**%.0f allocations, %.1f MB**", s.AllocsPerScrape, s.BytesPerScrape/1e6)
		}), "–")
		row(fmt.Sprintf("%d pods: CPU while idle, same windows (of one core)", pods), scrape(func(s *scrapeResult) string {
			return cpuPct(s.IdleCPU, time.Duration(s.Scrapes*s.Rounds)*s.Interval)
		}), "–")
		row(fmt.Sprintf("%d pods: one scrape: series, bytes, labelled containers", pods), scrape(func(s *scrapeResult) string {
			return fmt.Sprintf("%d, %d, %d", s.Series, s.Bytes, s.Containers)
		}), "–")
		row(fmt.Sprintf("%d pods: scrape wall time", pods), scrape(func(s *scrapeResult) string { return s.Latency.medP90() }), "–")
	}
	row("**Binary size, stripped**", func(f *flavorResult) string { return "**" + mibBytes(f.SizeStripped) + "**" }, "–")
	row("Binary size, as built", func(f *flavorResult) string { return mibBytes(f.SizeUnstripped) }, "–")

	if len(res.Errors) > 0 {
		b.WriteString("\nPhases that failed:\n\n")
		for _, e := range res.Errors {
			fmt.Fprintf(&b, "- %s\n", firstLine(e))
		}
	}
	b.WriteString("\nKubelet logs (klog E/W lines; most frequent first):\n\n")
	for _, f := range res.Flavors {
		var logs []logSummary
		if f.Start != nil {
			logs = append(logs, f.Start.Logs...)
		}
		if f.Mem != nil {
			logs = append(logs, f.Mem.Log)
		}
		for _, ls := range logs {
			if ls.Path == "" {
				continue
			}
			fmt.Fprintf(&b, "- %s, `%s`: %d lines, %d errors, %d warnings\n", f.Name, ls.Path, ls.Lines, ls.Errors, ls.Warnings)
			for _, l := range ls.Top {
				fmt.Fprintf(&b, "  - %s ×%d: `%s`\n", l.Severity, l.Count, strings.ReplaceAll(l.Text, "`", "'"))
			}
		}
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// clusterMarkdown renders the cluster phase: per batch size, one row per
// measure, one column per kubelet (and raw CRI).
func clusterMarkdown(res *results) string {
	if len(res.Cluster) == 0 {
		return ""
	}
	var b strings.Builder
	m := res.Machine
	fmt.Fprintf(&b, "## Cluster-mode benchmark, %s\n\n", res.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- machine: %d CPUs (%s), kernel %s, cgroup %s; load average before %s, after %s\n",
		m.CPUs, m.CPUModel, m.Kernel, m.Cgroup, m.LoadBefore, m.LoadAfter)
	fmt.Fprintf(&b, "- runtime: %s at %s\n", m.Runtime, res.Endpoint)
	for _, f := range res.Flavors {
		src := ""
		if f.Source != "" {
			src = ", built from " + f.Source
		}
		fmt.Fprintf(&b, "- %s: `%s`%s\n", f.Name, f.Version, src)
	}
	b.WriteString("\n| Pods | Measure |")
	for _, r := range res.Cluster {
		fmt.Fprintf(&b, " %s |", r.Name)
	}
	b.WriteString("\n|---|---|")
	for range res.Cluster {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	sizes := map[int]bool{}
	var order []int
	for _, r := range res.Cluster {
		for _, bt := range r.Batches {
			if !sizes[bt.Pods] {
				sizes[bt.Pods] = true
				order = append(order, bt.Pods)
			}
		}
	}
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	for _, n := range order {
		row := func(what string, f func(*clusterResult, *clusterBatch) string) {
			fmt.Fprintf(&b, "| %d | %s |", n, what)
			for _, r := range res.Cluster {
				v := "–"
				for _, bt := range r.Batches {
					if bt.Pods == n {
						v = f(r, bt)
					}
				}
				fmt.Fprintf(&b, " %s |", v)
			}
			b.WriteString("\n")
		}
		kubelet := func(f func(*clusterBatch) string) func(*clusterResult, *clusterBatch) string {
			return func(r *clusterResult, bt *clusterBatch) string {
				if r.Name == "raw CRI" {
					return "–"
				}
				return f(bt)
			}
		}
		row("**batch: first create → all Ready** (raw: all started)", func(_ *clusterResult, bt *clusterBatch) string {
			if bt.AllReady == 0 {
				return "failed"
			}
			return "**" + sec(bt.AllReady) + "**"
		})
		row("each pod: create → Ready, median / p90", func(_ *clusterResult, bt *clusterBatch) string {
			return fmt.Sprintf("%s / %s s", strconv.FormatFloat(bt.PodReady.Median.Seconds(), 'f', 2, 64), strconv.FormatFloat(bt.PodReady.P90.Seconds(), 'f', 2, 64))
		})
		row("**namespace delete → gone** (raw: all stopped and removed)", func(_ *clusterResult, bt *clusterBatch) string {
			if bt.Deleted == 0 {
				return "–"
			}
			return "**" + sec(bt.Deleted) + "**"
		})
		row("namespace delete → its pods gone from the API", kubelet(func(bt *clusterBatch) string {
			if bt.PodsGone == 0 {
				return "–"
			}
			return sec(bt.PodsGone)
		}))
		row("kubelet CPU: starting / deleting", kubelet(func(bt *clusterBatch) string {
			return fmt.Sprintf("%s / %s", sec(bt.StartCPU), sec(bt.DeleteCPU))
		}))
		row("kubelet CPU idle with the pods running (of one core)", kubelet(func(bt *clusterBatch) string { return cpuPct(bt.IdleCPU, bt.Idle) }))
		row("kubelet VmRSS / VmHWM (peak since start)", kubelet(func(bt *clusterBatch) string {
			return fmt.Sprintf("%s / %s", mib(bt.RSSkB), mib(bt.HWMkB))
		}))
		row("API requests per pod: starting / deleting", kubelet(func(bt *clusterBatch) string {
			return fmt.Sprintf("%.1f / %.1f", float64(bt.StartRequests)/float64(n), float64(bt.DeleteRequests)/float64(n))
		}))
		row("API requests idle: total (per pod per minute)", kubelet(func(bt *clusterBatch) string {
			if bt.Idle == 0 {
				return "–"
			}
			return fmt.Sprintf("%d (%.2f)", bt.IdleRequests, float64(bt.IdleRequests)/float64(n)/bt.Idle.Minutes())
		}))
		row("health: /healthz failed / polled; node not Ready; PLEG relist interval mean (largest bucket hit)", kubelet(func(bt *clusterBatch) string {
			mb := fmt.Sprintf("≤ %gs", bt.RelistMaxBucket)
			if bt.RelistMaxBucket < 0 {
				mb = "above the largest bucket"
			}
			return fmt.Sprintf("%d / %d; %d; %.2f s (%s)", bt.HealthzFailures, bt.HealthzPolls, len(bt.NodeNotReady), bt.RelistMean, mb)
		}))
	}
	for _, r := range res.Cluster {
		if r.Name == "raw CRI" {
			continue
		}
		fmt.Fprintf(&b, "\n%s log: %d errors, %d warnings", r.Name, r.Log.Errors, r.Log.Warnings)
		for _, bt := range r.Batches {
			for _, nr := range bt.NodeNotReady {
				fmt.Fprintf(&b, "\n- %d pods: node not Ready at %s", bt.Pods, nr)
			}
			for _, e := range bt.Errors {
				fmt.Fprintf(&b, "\n- %d pods: %s", bt.Pods, e)
			}
			if len(bt.IdleByVerb) > 0 {
				fmt.Fprintf(&b, "\n- %d pods, idle requests by verb: %v", bt.Pods, bt.IdleByVerb)
			}
		}
		b.WriteString("\n")
	}
	if len(res.Errors) > 0 {
		b.WriteString("\nErrors:\n")
		for _, e := range res.Errors {
			fmt.Fprintf(&b, "- %s\n", firstLine(e))
		}
	}
	return b.String()
}
