package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// scrapeResult is what one real /metrics/cadvisor scrape costs the kubelet
// with Pods running: its CPU time over Scrapes scrapes Interval apart, less
// its CPU time over as long a time without scrapes (its idle work: for
// upstream that includes cAdvisor's housekeeping, which does the reading
// its scrapes then serve from memory), averaged over Rounds alternating
// idle and scraping windows.
type scrapeResult struct {
	Pods             int
	Series, Bytes    int // of one scrape
	Containers       int // series of container_cpu_usage_seconds_total with a container label
	Scrapes, Rounds  int
	Interval         time.Duration
	IdleCPU, BusyCPU time.Duration // summed over the rounds
	PerScrape        time.Duration // (BusyCPU - IdleCPU) / (Scrapes * Rounds)
	Latency          dist          // wall time of one scrape
	// Direct is the CPU time of all the kubelet's threads (schedstat,
	// nanoseconds) from just before each scrape to just after its last
	// byte: no idle window to subtract, but garbage collection that runs
	// later is left out.
	Direct dist
	// IdleAllocs/BusyAllocs and IdleAllocBytes/BusyAllocBytes are the
	// differences of go_memstats_mallocs_total and
	// go_memstats_alloc_bytes_total on the kubelet's /metrics over the same
	// windows (both kubelets are Go programs and export them); each window
	// reads /metrics twice, so that reading cancels out.
	IdleAllocs, BusyAllocs          float64
	IdleAllocBytes, BusyAllocBytes  float64
	AllocsPerScrape, BytesPerScrape float64
}

// runScrapePhase starts the kubelet with o.scrapePods static pods, waits
// until they run and show on /metrics/cadvisor, lets it settle, then
// measures idle and scraping windows in turn.
func runScrapePhase(c *cri, fl flavor, o options) (*scrapeResult, error) {
	k, err := newKubelet(fl, o.workDir, "scrape", o.endpoint, o.verbosity)
	if err != nil {
		return nil, err
	}
	if fl.Name == "upstream" {
		// cAdvisor reads container labels from containerd itself, by
		// default on the shared socket: point it at the benchmark's.
		k.ExtraArgs = append(k.ExtraArgs, "--containerd", strings.TrimPrefix(o.endpoint, "unix://"))
	}
	res := &scrapeResult{Pods: o.scrapePods, Scrapes: o.scrapes, Rounds: o.scrapeRounds, Interval: o.scrapeInterval}
	defer func() {
		k.stop()
		if n, ready, err := c.removePodsWithSuffix(k.NodeName); err != nil || n > 0 {
			log.Printf("%s: removed %d leftover sandboxes, %d of them ready (err %v)", fl.Name, n, ready, err)
		}
	}()
	for i := 0; i < o.scrapePods; i++ {
		if err := k.writeManifest(fmt.Sprintf("bench-scrape-%03d", i), o.image); err != nil {
			return res, err
		}
	}
	log.Printf("%s scrape: %d pods, node %s, log %s", fl.Name, o.scrapePods, k.NodeName, k.LogPath)
	if err := k.start(); err != nil {
		return res, err
	}
	if _, err := k.waitHealthy(60 * time.Second); err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	running := func() int {
		pods, err := k.pods()
		if err != nil {
			return -1
		}
		n := 0
		for _, p := range pods {
			if p.Status.Phase == v1.PodRunning {
				n++
			}
		}
		return n
	}
	if _, err := pollUntil(ctx, 200*time.Millisecond, func() bool { return running() == o.scrapePods }); err != nil {
		if aerr := k.alive(); aerr != nil {
			return res, aerr
		}
		return res, fmt.Errorf("only %d of %d pods Running", running(), o.scrapePods)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		// The kubelet's self-signed serving certificate, on loopback.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 1,
		// Go's client asks for gzip, as Prometheus does, unless told not to.
		DisableCompression: o.scrapePlain,
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics/cadvisor", k.Port)
	metricsURL := fmt.Sprintf("https://127.0.0.1:%d/metrics", k.Port)
	// cAdvisor finds new cgroups on its housekeeping: wait until every
	// pod's container shows, labelled.
	var last scrapeStats
	if _, err := pollUntil(ctx, time.Second, func() bool {
		s, err := scrapeOnce(client, url)
		last = s
		return err == nil && s.containers >= o.scrapePods
	}); err != nil {
		return res, fmt.Errorf("%d of %d containers on /metrics/cadvisor: %w", last.containers, o.scrapePods, err)
	}
	log.Printf("%s scrape: all pods on /metrics/cadvisor; settling %v", fl.Name, o.memSettle)
	time.Sleep(o.memSettle)
	var lat, direct []time.Duration
	pid := k.cmd.Process.Pid
	for r := 0; r < o.scrapeRounds; r++ {
		window := time.Duration(o.scrapes) * o.scrapeInterval
		m0, err := goAllocs(client, metricsURL)
		if err != nil {
			return res, err
		}
		s0, err := k.sample()
		if err != nil {
			return res, err
		}
		time.Sleep(window)
		s1, err := k.sample()
		if err != nil {
			return res, err
		}
		m1, err := goAllocs(client, metricsURL)
		if err != nil {
			return res, err
		}
		res.IdleCPU += s1.CPU - s0.CPU
		res.IdleAllocs += m1.mallocs - m0.mallocs
		res.IdleAllocBytes += m1.bytes - m0.bytes
		if m1, err = goAllocs(client, metricsURL); err != nil {
			return res, err
		}
		var profiled chan error
		if o.scrapeProfile != "" && r == o.scrapeRounds-1 {
			profiled = make(chan error, 1)
			go func() {
				profiled <- saveProfile(client, fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/profile?seconds=%d", k.Port, int(window.Seconds())),
					filepath.Join(o.scrapeProfile, "cpu-"+fl.Name+".pprof"))
			}()
		}
		next := time.Now()
		for i := 0; i < o.scrapes; i++ {
			c0 := threadsCPU(pid)
			t0 := time.Now()
			s, err := scrapeOnce(client, url)
			if err != nil {
				return res, err
			}
			lat = append(lat, time.Since(t0))
			direct = append(direct, threadsCPU(pid)-c0)
			res.Series, res.Bytes, res.Containers = s.series, s.bytes, s.containers
			next = next.Add(o.scrapeInterval)
			time.Sleep(time.Until(next))
		}
		s2, err := k.sample()
		if err != nil {
			return res, err
		}
		m2, err := goAllocs(client, metricsURL)
		if err != nil {
			return res, err
		}
		if profiled != nil {
			if err := <-profiled; err != nil {
				log.Printf("%s scrape: no CPU profile: %v", fl.Name, err)
			}
		}
		res.BusyCPU += s2.CPU - s1.CPU
		res.BusyAllocs += m2.mallocs - m1.mallocs
		res.BusyAllocBytes += m2.bytes - m1.bytes
		log.Printf("%s scrape: round %d: idle %v, scraping %v over %v", fl.Name, r+1, s1.CPU-s0.CPU, s2.CPU-s1.CPU, window)
	}
	n := o.scrapes * o.scrapeRounds
	res.PerScrape = (res.BusyCPU - res.IdleCPU) / time.Duration(n)
	res.AllocsPerScrape = (res.BusyAllocs - res.IdleAllocs) / float64(n)
	res.BytesPerScrape = (res.BusyAllocBytes - res.IdleAllocBytes) / float64(n)
	res.Latency, res.Direct = summarize(lat), summarize(direct)
	return res, k.alive()
}

type scrapeStats struct {
	series, bytes, containers int
}

// scrapeOnce reads /metrics/cadvisor whole and counts its series.
func scrapeOnce(client *http.Client, url string) (scrapeStats, error) {
	var s scrapeStats
	resp, err := client.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return s, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.bytes += len(line) + 1
		if line == "" || line[0] == '#' {
			continue
		}
		s.series++
		if strings.HasPrefix(line, "container_cpu_usage_seconds_total{") && strings.Contains(line, `container="sleep"`) {
			s.containers++
		}
	}
	return s, sc.Err()
}

// threadsCPU is the time every thread of pid has run, from
// /proc/<pid>/task/*/schedstat (nanoseconds; /proc/<pid>/stat counts 10 ms
// ticks, too coarse for one scrape).
func threadsCPU(pid int) time.Duration {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

type allocCounts struct{ mallocs, bytes float64 }

// goAllocs reads go_memstats_mallocs_total and go_memstats_alloc_bytes_total
// from the kubelet's /metrics.
func goAllocs(client *http.Client, url string) (allocCounts, error) {
	var a allocCounts
	resp, err := client.Get(url)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return a, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	seen := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "go_memstats_mallocs_total":
			dst = &a.mallocs
		case "go_memstats_alloc_bytes_total":
			dst = &a.bytes
		default:
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return a, fmt.Errorf("%s: %s: %v", url, name, err)
		}
		*dst = v
		seen++
	}
	if err := sc.Err(); err != nil {
		return a, err
	}
	if seen != 2 {
		return a, fmt.Errorf("%s: no go_memstats_mallocs_total or go_memstats_alloc_bytes_total", url)
	}
	return a, nil
}

// saveProfile writes what url (a pprof endpoint) answers to path.
func saveProfile(client *http.Client, url, path string) error {
	c := *client
	c.Timeout = 5 * time.Minute
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
