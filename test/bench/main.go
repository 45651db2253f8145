// Command bench compares our kubelet with the upstream kubelet end to end on
// this machine, with raw CRI calls as the baseline:
//
//   - raw: RunPodSandbox + CreateContainer + StartContainer of a busybox
//     `sleep 3600` container, straight to the runtime;
//   - start: per kubelet, with the kubelet running and healthy, a static pod
//     manifest of that container is renamed into staticPodPath and timed
//     until the runtime lists the container RUNNING (CRI ListContainers,
//     polled every 10 ms) and until the read-only /pods reports the pod
//     Running (polled every 10 ms); then the manifest is removed and the pod
//     waited out. One warm-up pod, then -runs measured ones;
//   - mem: per kubelet, started with -mem-pods manifests in place: time
//     until all are Running, then after -mem-settle its VmRSS, VmHWM,
//     threads and CPU use while idle;
//   - binary sizes of the binaries given.
//
// The kubelets run one after the other, never together (each stops pods it
// does not know), each with its own node name, ports, root and log
// directories. hack/bench.sh builds everything, runs it on a containerd
// private to the benchmark and prints the table.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type options struct {
	ours, upstream                  string
	oursUnstripped, upstreamUnstrip string
	endpoint, image, workDir        string
	runs, memPods, blocks           int
	scrapePods, scrapes             int
	scrapeRounds                    int
	scrapeInterval                  time.Duration
	scrapePlain                     bool
	scrapeProfile                   string
	memSettle                       time.Duration
	verbosity                       int
	phases                          map[string]bool
	jsonOut, mdOut                  string
	privateRuntime                  bool
	cleanupOnly                     bool
	runtimeLog                      string
	oursSource                      string
	cluster                         clusterOptions
}

// startRun is one measured static pod start and stop; durations are from
// the moment the manifest was renamed into place.
type startRun struct {
	CRIRunning  time.Duration // the runtime lists the container RUNNING
	PodsRunning time.Duration // /pods shows the pod Running
	// From the runtime's own timestamps.
	SandboxCreated   time.Duration
	ContainerCreated time.Duration
	ContainerStarted time.Duration
	// From the manifest's removal.
	StopCRI  time.Duration // no RUNNING container left
	StopGone time.Duration // gone from /pods and no READY sandbox left

	// From the runtime's log (-runtime-log): when each call began and
	// returned, so time spent in the kubelet and in the runtime separate.
	Pod   string
	T0    time.Time `json:"-"`
	Calls *criCalls `json:",omitempty"`
}

type startResult struct {
	Healthy                 []time.Duration // process start → /healthz ok and /pods answers, per block
	IdleRSSkB               int64           // 2 s after healthy, no pods (first block)
	IdleAnonkB, IdleFilekB  int64
	Warmups                 []startRun // the first pod of each block
	Runs                    []startRun
	CRIRunning, PodsRunning dist
	SandboxCreated          dist
	SandboxToContainer      dist
	CreateToStart           dist
	StatusLag               dist // CRI RUNNING → /pods Running
	StopCRI, StopGone       dist
	Logs                    []logSummary

	// From the runtime's log, when given.
	Reaction             dist // manifest → RunPodSandbox begins
	SandboxCall          dist // RunPodSandbox
	SandboxToCreate      dist // RunPodSandbox returned → CreateContainer begins
	CreateCall           dist // CreateContainer
	CreateToStart2       dist // CreateContainer returned → StartContainer begins
	StartCall            dist // StartContainer
	StartToPods          dist // StartContainer returned → /pods Running
	InKubelet, InRuntime dist // sums up to StartContainer returning
}

type memResult struct {
	Pods           int
	Healthy        time.Duration
	AllRunning     time.Duration // process start → all pods Running in /pods
	StartCPU       time.Duration // CPU time used from process start to all Running
	RSSkB, HWMkB   int64
	AnonkB, FilekB int64
	Threads        int64
	IdleCPU        time.Duration // CPU time used during the settle period
	Settle         time.Duration
	StopAll        time.Duration // all manifests removed → all gone
	Log            logSummary
}

type flavorResult struct {
	Name, Binary, Version string
	Source                string
	SizeStripped          int64
	SizeUnstripped        int64
	Start                 *startResult
	Mem                   *memResult
	Scrape                *scrapeResult
}

type rawResult struct {
	Runs                          []rawRun
	Sandbox, Create, Start, Total dist
	SandboxCreate                 dist // RunPodSandbox + CreateContainer
	Seen                          dist // the poller saw the container RUNNING
}

type results struct {
	Date     time.Time
	Machine  machine
	Endpoint string
	Private  bool
	Image    string
	Runs     int
	Raw      *rawResult
	Flavors  []*flavorResult
	Cluster  []*clusterResult `json:",omitempty"`
	Errors   []string
}

func main() {
	var o options
	var phases string
	flag.StringVar(&o.ours, "ours", "", "our kubelet binary (stripped)")
	flag.StringVar(&o.upstream, "upstream", "", "upstream kubelet binary (stripped); empty skips it")
	flag.StringVar(&o.oursUnstripped, "ours-unstripped", "", "unstripped build of ours, only for its size")
	flag.StringVar(&o.upstreamUnstrip, "upstream-unstripped", "", "unstripped upstream kubelet, only for its size")
	flag.StringVar(&o.endpoint, "endpoint", "unix:///run/containerd/containerd.sock", "CRI endpoint")
	flag.BoolVar(&o.privateRuntime, "private-runtime", false, "the endpoint belongs to the benchmark alone: remove every pod on it at the end")
	flag.StringVar(&o.image, "image", "docker.io/library/busybox:1.36", "container image (must be present)")
	flag.StringVar(&o.workDir, "work", "", "work directory (default: a new temporary one)")
	flag.IntVar(&o.runs, "runs", 10, "measured single-pod starts per kubelet (and raw CRI starts)")
	flag.IntVar(&o.blocks, "blocks", 2, "split each kubelet's starts into this many blocks, alternating between the kubelets (a fresh kubelet and warm-up pod each)")
	flag.IntVar(&o.memPods, "mem-pods", 30, "pods for the memory phase")
	flag.DurationVar(&o.memSettle, "mem-settle", 30*time.Second, "wait after all pods run before reading memory")
	flag.IntVar(&o.verbosity, "v", 2, "kubelet log verbosity (both)")
	flag.IntVar(&o.scrapePods, "scrape-pods", 100, "pods for the scrape phase")
	flag.IntVar(&o.scrapes, "scrapes", 20, "/metrics/cadvisor scrapes per round of the scrape phase")
	flag.IntVar(&o.scrapeRounds, "scrape-rounds", 2, "rounds (an idle window, then a scraping window) of the scrape phase")
	flag.DurationVar(&o.scrapeInterval, "scrape-interval", time.Second, "time between scrapes in the scrape phase")
	flag.StringVar(&o.scrapeProfile, "scrape-profile", "", "save a CPU profile of each kubelet over the last scraping window here (DIR/cpu-FLAVOR.pprof, from /debug/pprof/profile)")
	flag.BoolVar(&o.scrapePlain, "scrape-plain", false, "scrape without Accept-Encoding: gzip (by default the client asks for gzip, as Prometheus does)")
	flag.StringVar(&phases, "phases", "raw,start,mem", "phases to run (raw, start, mem, scrape; cluster: the kubelets as nodes of -apiserver, rawcluster: the same batches on raw CRI)")
	flag.StringVar(&o.jsonOut, "json", "", "write the results as JSON here")
	flag.StringVar(&o.oursSource, "ours-source", "", "where our kubelet was built from (for the report)")
	flag.StringVar(&o.runtimeLog, "runtime-log", "", "containerd's log (info level), to split start-up time between kubelet and runtime")
	flag.StringVar(&o.mdOut, "md", "", "write the Markdown report here")
	var batches string
	flag.StringVar(&o.cluster.apiserver, "apiserver", "", "cluster phase: the control plane's apiserver URL (one of the benchmark's own)")
	flag.StringVar(&o.cluster.pkiDir, "pki-dir", "/var/lib/seed-kubelet/pki", "cluster phase: directory of ca.crt and the admin's admin.crt, admin.key")
	flag.StringVar(&o.cluster.nodeKubeconfig, "node-kubeconfig", "", "cluster phase: the node's kubeconfig (user system:node:NAME)")
	flag.StringVar(&o.cluster.nodeName, "node-name", "", "cluster phase: the node name both kubelets register as")
	flag.StringVar(&o.cluster.nodeIP, "node-ip", "", "cluster phase: the node's --node-ip (not loopback: upstream refuses it)")
	flag.StringVar(&o.cluster.auditLog, "audit-log", "", "cluster phase: the apiserver's audit log (JSON), to count the node's requests")
	flag.StringVar(&o.cluster.image, "cluster-image", "registry.k8s.io/pause:3.10", "cluster phase: the pods' image (must exit on SIGTERM)")
	flag.StringVar(&batches, "batches", "1,30,100,250", "cluster phase: batch sizes")
	flag.IntVar(&o.cluster.inflight, "inflight", 10, "cluster phase: creates (raw CRI: pod starts) in flight")
	flag.DurationVar(&o.cluster.idle, "cluster-idle", 30*time.Second, "cluster phase: idle window with each batch running")
	flag.DurationVar(&o.cluster.timeout, "batch-timeout", 10*time.Minute, "cluster phase: how long a batch may take to be Ready, and its namespace to go")
	flag.BoolVar(&o.cleanupOnly, "cleanup-only", false, "only remove pods the benchmark left on the endpoint (every pod with -private-runtime)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("bench: ")
	o.phases = map[string]bool{}
	for _, p := range strings.Split(phases, ",") {
		o.phases[strings.TrimSpace(p)] = true
	}
	var err error
	if o.cluster.batches, err = parseBatches(batches); err != nil {
		log.Fatal(err)
	}
	if o.cleanupOnly {
		c, err := dialCRI(o.endpoint)
		if err != nil {
			log.Fatal(err)
		}
		removeBenchPods(c, o.privateRuntime)
		return
	}
	if o.ours == "" && o.upstream == "" && !o.phases["raw"] && !o.phases["rawcluster"] {
		log.Fatal("nothing to do: give -ours and/or -upstream")
	}
	if o.workDir == "" {
		d, err := os.MkdirTemp("", "kubelet-bench-")
		if err != nil {
			log.Fatal(err)
		}
		o.workDir = d
	}

	c, err := dialCRI(o.endpoint)
	if err != nil {
		log.Fatal(err)
	}
	var api kubernetes.Interface
	if o.phases["cluster"] || o.phases["rawcluster"] {
		if ok, err := c.imagePresent(o.cluster.image); err != nil || !ok {
			log.Fatalf("image %s is not present on %s (err %v)", o.cluster.image, o.endpoint, err)
		}
	}
	if o.phases["cluster"] {
		if o.cluster.apiserver == "" || o.cluster.nodeKubeconfig == "" || o.cluster.nodeName == "" || o.cluster.nodeIP == "" {
			log.Fatal("the cluster phase needs -apiserver, -node-kubeconfig, -node-name and -node-ip (hack/bench.sh --cluster gives them)")
		}
		if api, err = o.cluster.adminClient(); err != nil {
			log.Fatal(err)
		}
	}
	if ok, err := c.imagePresent(o.image); err != nil || !ok {
		log.Fatalf("image %s is not present on %s (err %v): run hack/setup-node.sh", o.image, o.endpoint, err)
	}

	// An interrupt stops the kubelets and removes what they started.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		log.Printf("%v: stopping kubelets and removing benchmark pods", s)
		stopAllRunning()
		removeBenchPods(c, o.privateRuntime)
		os.Exit(130)
	}()

	res := &results{Date: time.Now(), Machine: readMachine(), Endpoint: o.endpoint, Private: o.privateRuntime, Image: o.image, Runs: o.runs}
	res.Machine.Runtime = c.version()
	log.Printf("work dir %s; runtime %s; load %s", o.workDir, res.Machine.Runtime, res.Machine.LoadBefore)

	var flavors []*flavorResult
	var fls []flavor
	if o.ours != "" {
		fls = append(fls, flavor{Name: "ours", Binary: o.ours, ExtraConfig: extraConfig})
	}
	if o.upstream != "" {
		fls = append(fls, flavor{Name: "upstream", Binary: o.upstream, ExtraConfig: extraConfig})
	}
	for _, fl := range fls {
		fr := &flavorResult{Name: fl.Name, Binary: fl.Binary, SizeStripped: fileSize(fl.Binary)}
		fr.Version = (&kubelet{flavor: fl}).version()
		if fl.Name == "ours" {
			fr.Source = o.oursSource
			fr.SizeUnstripped = fileSize(o.oursUnstripped)
		} else {
			fr.SizeUnstripped = fileSize(o.upstreamUnstrip)
		}
		flavors = append(flavors, fr)
	}
	res.Flavors = flavors
	fail := func(what string, err error) {
		msg := fmt.Sprintf("%s: %v", what, err)
		log.Print("ERROR " + msg)
		res.Errors = append(res.Errors, msg)
	}

	// Phases alternate between the kubelets so that drift in the machine's
	// load hits both alike; raw CRI runs first and last.
	if o.phases["raw"] {
		raw, err := runRaw(c, o, o.runs/2+o.runs%2)
		if err != nil {
			fail("raw CRI", err)
		}
		res.Raw = raw
	}
	if o.phases["start"] {
		for i := range fls {
			flavors[i].Start = &startResult{}
		}
		failed := map[string]bool{}
		for b := 0; b < o.blocks; b++ {
			n := o.runs / o.blocks
			if b < o.runs%o.blocks {
				n++
			}
			for i, fl := range fls {
				if failed[fl.Name] {
					continue
				}
				if err := runStartBlock(c, fl, o, b, n, flavors[i].Start); err != nil {
					fail(fl.Name+" start", err)
					failed[fl.Name] = true
				}
			}
		}
		for i := range fls {
			flavors[i].Start.summarizeRuns()
		}
	}
	if o.phases["mem"] {
		for i, fl := range fls {
			r, err := runMemPhase(c, fl, o)
			if err != nil {
				fail(fl.Name+" memory", err)
			}
			flavors[i].Mem = r
		}
	}
	if o.phases["scrape"] {
		for i, fl := range fls {
			r, err := runScrapePhase(c, fl, o)
			if err != nil {
				fail(fl.Name+" scrape", err)
			}
			flavors[i].Scrape = r
		}
	}
	if o.phases["rawcluster"] {
		r, err := runRawBatches(c, o, o.cluster)
		if err != nil {
			fail("raw CRI batches", err)
		}
		res.Cluster = append(res.Cluster, r)
		removeBenchPods(c, o.privateRuntime)
	}
	if o.phases["cluster"] {
		for _, fl := range fls {
			r, err := runClusterPhase(c, fl, o, o.cluster, api)
			if err != nil {
				fail(fl.Name+" cluster", err)
			}
			res.Cluster = append(res.Cluster, r)
		}
	}
	if o.phases["raw"] {
		raw, err := runRaw(c, o, o.runs/2)
		if err != nil {
			fail("raw CRI", err)
		}
		if res.Raw == nil {
			res.Raw = raw
		} else if raw != nil {
			res.Raw.Runs = append(res.Raw.Runs, raw.Runs...)
		}
		if res.Raw != nil {
			res.Raw.summarize()
		}
	}
	removeBenchPods(c, o.privateRuntime)
	res.Machine.LoadAfter = loadavg()

	md := clusterMarkdown(res)
	if o.phases["raw"] || o.phases["start"] || o.phases["mem"] || o.phases["scrape"] {
		md = markdown(res) + md
	}
	fmt.Print(md)
	if o.mdOut != "" {
		if err := os.WriteFile(o.mdOut, []byte(md), 0o644); err != nil {
			log.Print(err)
		}
	}
	if o.jsonOut != "" {
		data, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.jsonOut, data, 0o644); err != nil {
			log.Print(err)
		}
	}
	if len(res.Errors) > 0 {
		os.Exit(1)
	}
}

func fileSize(path string) int64 {
	if path == "" {
		return 0
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// removeBenchPods removes whatever a failed phase left: every pod on a
// private runtime, else pods of our bench-* node names.
func removeBenchPods(c *cri, private bool) {
	if private {
		if n, ready, err := c.removePodsWithSuffix(""); err != nil || n > 0 {
			log.Printf("final cleanup: removed %d sandboxes, %d of them ready (err %v)", n, ready, err)
		}
		return
	}
	ctx, cancel := callCtx()
	defer cancel()
	sbs, err := c.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return
	}
	nodes := map[string]bool{}
	for _, sb := range sbs.Items {
		name := sb.GetLabels()[labelPodName]
		if i := strings.Index(name, "-bench-"); i >= 0 && strings.HasPrefix(name, "bench-") {
			nodes[name[i+1:]] = true
		}
	}
	for n := range nodes {
		if k, ready, err := c.removePodsWithSuffix(n); err != nil || k > 0 {
			log.Printf("final cleanup: removed %d sandboxes of %s, %d of them ready (err %v)", k, n, ready, err)
		}
	}
}

func runRaw(c *cri, o options, n int) (*rawResult, error) {
	node := "bench-raw-" + randHex(3)
	logRoot := filepath.Join(o.workDir, "raw-logs")
	res := &rawResult{}
	defer func() { _, _, _ = c.removePodsWithSuffix(node) }()
	log.Printf("raw CRI: 1 warm-up + %d starts", n)
	for i := 0; i <= n; i++ {
		name := fmt.Sprintf("bench-raw-%d", i)
		r, _, err := c.rawStart(rawPod{Name: name, Node: node, LogRoot: logRoot, Image: o.image, Command: []string{"sleep", "3600"}, Poll: true})
		if err == nil && i == 0 {
			// Where the runtime's timestamps fall relative to the calls, which
			// is how the kubelets' start-up breakdown is to be read.
			if tl, terr := c.podTimeline(name + "-" + node); terr == nil {
				t0 := r.Began
				log.Printf("raw CRI timestamps: sandbox CreatedAt %s ms (RunPodSandbox returned %s ms); container CreatedAt %s ms (CreateContainer returned %s ms); StartedAt %s ms (StartContainer returned %s ms)",
					ms(tl.SandboxCreated.Sub(t0)), ms(r.Sandbox), ms(tl.ContainerCreated.Sub(t0)), ms(r.Sandbox+r.Create),
					ms(tl.ContainerStarted.Sub(t0)), ms(r.Total))
			}
		}
		if _, _, cerr := c.removePodsWithSuffix(node); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			return res, err
		}
		if i > 0 {
			res.Runs = append(res.Runs, r)
		}
		time.Sleep(300 * time.Millisecond)
	}
	res.summarize()
	return res, nil
}

func (r *rawResult) summarize() {
	var sb, cr, st, tot, sbcr, seen []time.Duration
	for _, x := range r.Runs {
		sb, cr, st, tot = append(sb, x.Sandbox), append(cr, x.Create), append(st, x.Start), append(tot, x.Total)
		sbcr = append(sbcr, x.Sandbox+x.Create)
		if x.Seen > 0 {
			seen = append(seen, x.Seen)
		}
	}
	r.Seen = summarize(seen)
	r.Sandbox, r.Create, r.Start, r.Total = summarize(sb), summarize(cr), summarize(st), summarize(tot)
	r.SandboxCreate = summarize(sbcr)
}

// runStartBlock starts a kubelet, times one warm-up pod and then n pods,
// and adds them to res. The phase runs in blocks that alternate between the
// kubelets, so that load drifting on the machine hits both alike.
func runStartBlock(c *cri, fl flavor, o options, block, n int, res *startResult) error {
	k, err := newKubelet(fl, o.workDir, fmt.Sprintf("start%d", block), o.endpoint, o.verbosity)
	if err != nil {
		return err
	}
	blockStart := time.Now()
	var runs []startRun
	defer func() {
		k.stop()
		// Stopped sandboxes a kubelet keeps are normal; ready ones are not.
		if n, ready, err := c.removePodsWithSuffix(k.NodeName); err != nil || n > 0 {
			log.Printf("%s: removed %d leftover sandboxes, %d of them ready (err %v)", fl.Name, n, ready, err)
		}
		res.Logs = append(res.Logs, summarizeLog(k.LogPath))
		if o.runtimeLog != "" {
			calls, err := readRuntimeLog(o.runtimeLog, blockStart)
			if err != nil {
				log.Printf("runtime log: %v", err)
			}
			for i := range runs {
				if c := calls[runs[i].Pod]; c.complete() {
					runs[i].Calls = c
				}
			}
		}
		res.Runs = append(res.Runs, runs...)
	}()
	log.Printf("%s start, block %d: node %s, log %s", fl.Name, block, k.NodeName, k.LogPath)
	if err := k.start(); err != nil {
		return err
	}
	healthy, err := k.waitHealthy(60 * time.Second)
	if err != nil {
		return err
	}
	res.Healthy = append(res.Healthy, healthy)
	// Let start-up work (first relist, housekeeping) pass before timing.
	time.Sleep(2 * time.Second)
	if s, err := k.sample(); err == nil && res.IdleRSSkB == 0 {
		res.IdleRSSkB, res.IdleAnonkB, res.IdleFilekB = s.RSSkB, s.AnonkB, s.FilekB
	}
	for i := 0; i <= n; i++ {
		r, err := startOne(c, k, fmt.Sprintf("bench-start-%d", i), o.image)
		if err != nil {
			return fmt.Errorf("block %d run %d: %w", block, i, err)
		}
		log.Printf("%s run %d.%d: CRI running %s ms, /pods Running %s ms, stopped %s ms, gone %s ms",
			fl.Name, block, i, ms(r.CRIRunning), ms(r.PodsRunning), ms(r.StopCRI), ms(r.StopGone))
		if i == 0 {
			res.Warmups = append(res.Warmups, r)
		} else {
			runs = append(runs, r)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Let the last pod's sandbox be stopped and removed before SIGTERM.
	time.Sleep(3 * time.Second)
	return nil
}

// summarizeRuns computes the distributions over all blocks' runs.
func (res *startResult) summarizeRuns() {
	var cri, pods, sb, s2c, c2s, lag, stop, gone []time.Duration
	for _, r := range res.Runs {
		cri = append(cri, r.CRIRunning)
		pods = append(pods, r.PodsRunning)
		sb = append(sb, r.SandboxCreated)
		s2c = append(s2c, r.ContainerCreated-r.SandboxCreated)
		c2s = append(c2s, r.ContainerStarted-r.ContainerCreated)
		lag = append(lag, r.PodsRunning-r.CRIRunning)
		stop = append(stop, r.StopCRI)
		gone = append(gone, r.StopGone)
	}
	res.CRIRunning, res.PodsRunning = summarize(cri), summarize(pods)
	res.SandboxCreated, res.SandboxToContainer, res.CreateToStart = summarize(sb), summarize(s2c), summarize(c2s)
	res.StatusLag, res.StopCRI, res.StopGone = summarize(lag), summarize(stop), summarize(gone)
	res.summarizeCalls()
}

// both runs the two conditions concurrently, each polled every 10 ms, and
// returns when each first held.
func both(ctx context.Context, a, b func() bool) (time.Time, time.Time, error) {
	var wg sync.WaitGroup
	var ta, tb time.Time
	var ea, eb error
	wg.Add(2)
	go func() { defer wg.Done(); ta, ea = pollUntil(ctx, 10*time.Millisecond, a) }()
	go func() { defer wg.Done(); tb, eb = pollUntil(ctx, 10*time.Millisecond, b) }()
	wg.Wait()
	if ea != nil {
		return ta, tb, ea
	}
	return ta, tb, eb
}

func podPhase(pods []v1.Pod, name string) (v1.PodPhase, bool) {
	for i := range pods {
		if pods[i].Name == name {
			return pods[i].Status.Phase, true
		}
	}
	return "", false
}

func startOne(c *cri, k *kubelet, name, image string) (startRun, error) {
	var r startRun
	full := k.fullName(name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	r.T0, r.Pod = t0, full
	if err := k.writeManifest(name, image); err != nil {
		return r, err
	}
	podsAt, criAt, err := both(ctx,
		func() bool {
			pods, err := k.pods()
			if err != nil {
				return false
			}
			ph, _ := podPhase(pods, full)
			return ph == v1.PodRunning
		},
		func() bool {
			cs, err := c.runningContainers(ctx, full)
			return err == nil && len(cs) > 0
		})
	if err != nil {
		if aerr := k.alive(); aerr != nil {
			return r, aerr
		}
		return r, fmt.Errorf("pod %s not running within 60 s (/pods at %v, CRI at %v): %w", full, !podsAt.IsZero(), !criAt.IsZero(), err)
	}
	r.PodsRunning, r.CRIRunning = podsAt.Sub(t0), criAt.Sub(t0)
	if tl, err := c.podTimeline(full); err == nil {
		r.SandboxCreated = tl.SandboxCreated.Sub(t0)
		r.ContainerCreated = tl.ContainerCreated.Sub(t0)
		r.ContainerStarted = tl.ContainerStarted.Sub(t0)
	} else {
		log.Printf("timeline of %s: %v", full, err)
	}

	t1 := time.Now()
	if err := k.removeManifest(name); err != nil {
		return r, err
	}
	stopAt, goneAt, err := both(ctx,
		func() bool {
			cs, err := c.runningContainers(ctx, full)
			return err == nil && len(cs) == 0
		},
		func() bool {
			pods, err := k.pods()
			if err != nil {
				return false
			}
			if _, listed := podPhase(pods, full); listed {
				return false
			}
			sbs, err := c.readySandboxes(ctx, full)
			return err == nil && len(sbs) == 0
		})
	if err != nil {
		if aerr := k.alive(); aerr != nil {
			return r, aerr
		}
		return r, fmt.Errorf("pod %s not gone within 60 s of removing its manifest: %w", full, err)
	}
	r.StopCRI, r.StopGone = stopAt.Sub(t1), goneAt.Sub(t1)
	return r, nil
}

// summarizeCalls splits the measured starts by the runtime's log: time
// between the calls is the kubelet's, time inside them the runtime's.
func (res *startResult) summarizeCalls() {
	var react, sbc, s2c, cc, c2s, stc, s2p, kub, rt []time.Duration
	for _, r := range res.Runs {
		c := r.Calls
		if c == nil {
			continue
		}
		react = append(react, c.SandboxBegin.Sub(r.T0))
		sbc = append(sbc, c.SandboxEnd.Sub(c.SandboxBegin))
		s2c = append(s2c, c.CreateBegin.Sub(c.SandboxEnd))
		cc = append(cc, c.CreateEnd.Sub(c.CreateBegin))
		c2s = append(c2s, c.StartBegin.Sub(c.CreateEnd))
		stc = append(stc, c.StartEnd.Sub(c.StartBegin))
		s2p = append(s2p, r.T0.Add(r.PodsRunning).Sub(c.StartEnd))
		kub = append(kub, c.SandboxBegin.Sub(r.T0)+c.CreateBegin.Sub(c.SandboxEnd)+c.StartBegin.Sub(c.CreateEnd))
		rt = append(rt, c.SandboxEnd.Sub(c.SandboxBegin)+c.CreateEnd.Sub(c.CreateBegin)+c.StartEnd.Sub(c.StartBegin))
	}
	res.Reaction, res.SandboxCall, res.SandboxToCreate = summarize(react), summarize(sbc), summarize(s2c)
	res.CreateCall, res.CreateToStart2, res.StartCall = summarize(cc), summarize(c2s), summarize(stc)
	res.StartToPods, res.InKubelet, res.InRuntime = summarize(s2p), summarize(kub), summarize(rt)
}

func runMemPhase(c *cri, fl flavor, o options) (*memResult, error) {
	k, err := newKubelet(fl, o.workDir, "mem", o.endpoint, o.verbosity)
	if err != nil {
		return nil, err
	}
	res := &memResult{Pods: o.memPods, Settle: o.memSettle}
	defer func() {
		k.stop()
		// Stopped sandboxes a kubelet keeps are normal; ready ones are not.
		if n, ready, err := c.removePodsWithSuffix(k.NodeName); err != nil || n > 0 {
			log.Printf("%s: removed %d leftover sandboxes, %d of them ready (err %v)", fl.Name, n, ready, err)
		}
		res.Log = summarizeLog(k.LogPath)
	}()
	names := make([]string, o.memPods)
	for i := range names {
		names[i] = fmt.Sprintf("bench-mem-%02d", i)
		if err := k.writeManifest(names[i], o.image); err != nil {
			return res, err
		}
	}
	log.Printf("%s memory: %d pods, node %s, log %s", fl.Name, o.memPods, k.NodeName, k.LogPath)
	if err := k.start(); err != nil {
		return res, err
	}
	if res.Healthy, err = k.waitHealthy(60 * time.Second); err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	running := func() int {
		pods, err := k.pods()
		if err != nil {
			return -1
		}
		n := 0
		for _, p := range pods {
			if strings.HasSuffix(p.Name, "-"+k.NodeName) && p.Status.Phase == v1.PodRunning {
				n++
			}
		}
		return n
	}
	allAt, err := pollUntil(ctx, 50*time.Millisecond, func() bool { return running() == o.memPods })
	if err != nil {
		if aerr := k.alive(); aerr != nil {
			return res, aerr
		}
		return res, fmt.Errorf("only %d of %d pods Running after 3 minutes", running(), o.memPods)
	}
	res.AllRunning = allAt.Sub(k.started)
	s0, err := k.sample()
	if err != nil {
		return res, err
	}
	res.StartCPU = s0.CPU
	log.Printf("%s memory: all %d Running %s ms after start; settling %v", fl.Name, o.memPods, ms(res.AllRunning), o.memSettle)
	time.Sleep(o.memSettle)
	if err := k.alive(); err != nil {
		return res, err
	}
	s1, err := k.sample()
	if err != nil {
		return res, err
	}
	res.RSSkB, res.HWMkB, res.Threads, res.IdleCPU = s1.RSSkB, s1.HWMkB, s1.Threads, s1.CPU-s0.CPU
	res.AnonkB, res.FilekB = s1.AnonkB, s1.FilekB
	if n := running(); n != o.memPods {
		log.Printf("%s memory: only %d of %d pods Running after settling", fl.Name, n, o.memPods)
	}

	t1 := time.Now()
	for _, n := range names {
		if err := k.removeManifest(n); err != nil {
			return res, err
		}
	}
	goneAt, err := pollUntil(ctx, 50*time.Millisecond, func() bool {
		pods, err := k.pods()
		if err != nil || len(pods) > 0 {
			return false
		}
		cctx, ccancel := callCtx()
		defer ccancel()
		cs, err := c.rs.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
		if err != nil {
			return false
		}
		for _, ct := range cs.Containers {
			if strings.HasSuffix(ct.Labels[labelPodName], "-"+k.NodeName) {
				return false
			}
		}
		sbs, err := c.rs.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
		if err != nil {
			return false
		}
		for _, sb := range sbs.Items {
			if strings.HasSuffix(sb.Labels[labelPodName], "-"+k.NodeName) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return res, fmt.Errorf("pods not gone after removing their manifests: %w", err)
	}
	res.StopAll = goneAt.Sub(t1)
	// Sandboxes may still be being stopped; let that finish before SIGTERM.
	time.Sleep(3 * time.Second)
	return res, nil
}
