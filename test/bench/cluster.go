package main

// The cluster phase: each kubelet in turn joins a control plane of the
// benchmark's own as the same node, and batches of pods are created through
// the API server (10 creates in flight), observed Ready through a watch,
// left running for an idle window, then deleted with their namespace. Raw
// CRI does the same batches straight on the runtime as the floor.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// clusterOptions name the control plane and node of the cluster phase
// (hack/bench.sh --cluster starts the one and issues the other).
type clusterOptions struct {
	apiserver      string // https://127.0.0.1:PORT
	pkiDir         string // ca.crt, admin.crt, admin.key
	nodeKubeconfig string // the node's credentials (user system:node:NAME)
	nodeName       string
	nodeIP         string
	auditLog       string // the apiserver's audit log of the node's requests
	image          string // the pods' image: one that exits on SIGTERM
	batches        []int
	inflight       int
	idle           time.Duration
	timeout        time.Duration // for a batch to be Ready, and for its namespace to go
}

// clusterBatch is one batch of pods on one kubelet (or raw CRI).
type clusterBatch struct {
	Pods      int
	AllReady  time.Duration // first create → the last pod Ready in the watch (raw: StartContainer returned)
	PodReady  dist          // each pod's create → Ready
	Deleted   time.Duration // namespace delete → namespace gone (raw: all sandboxes stopped and removed)
	PodsGone  time.Duration // namespace delete → no pod of it left in the API (the kubelet confirmed each)
	StartCPU  time.Duration // the kubelet's CPU from the first create to all Ready
	DeleteCPU time.Duration // … from the namespace delete to it being gone
	IdleCPU   time.Duration // … over the idle window with the pods running
	Idle      time.Duration
	RSSkB     int64 // at the end of the idle window
	HWMkB     int64 // VmHWM then (the peak since the kubelet started)
	// The node's API requests (the apiserver's audit log, user
	// system:node:NAME): while the batch started, over the idle window, and
	// while it was deleted.
	StartRequests, IdleRequests, DeleteRequests int
	IdleByVerb                                  map[string]int `json:",omitempty"`
	// Health over the batch: /healthz polled every second (failures), the
	// node's Ready condition from a watch (any moment not True), and the
	// PLEG relist interval from the kubelet's metrics (mean and the
	// largest histogram bucket that received an observation).
	HealthzPolls, HealthzFailures int
	NodeNotReady                  []string `json:",omitempty"`
	RelistMean, RelistMaxBucket   float64
	Errors                        []string `json:",omitempty"`
}

// clusterResult is one kubelet's (or raw CRI's) batches.
type clusterResult struct {
	Name    string
	Runtime string
	Batches []*clusterBatch
	Log     logSummary
}

func parseBatches(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad batch size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func (co clusterOptions) adminClient() (kubernetes.Interface, error) {
	cfg := &rest.Config{
		Host: co.apiserver,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   filepath.Join(co.pkiDir, "ca.crt"),
			CertFile: filepath.Join(co.pkiDir, "admin.crt"),
			KeyFile:  filepath.Join(co.pkiDir, "admin.key"),
		},
		UserAgent: "seed-kubelet-bench",
		// The creates are limited by -cluster-inflight, not by the client.
		QPS: 500, Burst: 1000,
	}
	return kubernetes.NewForConfig(cfg)
}

// clusterConfig is the KubeletConfiguration both kubelets get in cluster
// mode: the standalone one's cgroup settings, the node's authentication
// (client certificates of the cluster CA, the API server's webhook for the
// rest) and maxPods 250.
func (co clusterOptions) clusterConfig() string {
	return fmt.Sprintf(`failCgroupV1: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
cgroupsPerQOS: false
enforceNodeAllocatable: []
maxPods: 250
`, filepath.Join(co.pkiDir, "ca.crt"))
}

// runClusterPhase runs the batches on one kubelet: it joins as the node,
// and each batch runs in a namespace of its own.
func runClusterPhase(c *cri, fl flavor, o options, co clusterOptions, api kubernetes.Interface) (*clusterResult, error) {
	fl.ExtraConfig = co.clusterConfig()
	res := &clusterResult{Name: fl.Name, Runtime: c.version()}
	k, err := newKubelet(fl, o.workDir, "cluster", o.endpoint, o.verbosity)
	if err != nil {
		return res, err
	}
	k.NodeName = co.nodeName
	k.ExtraArgs = []string{"--kubeconfig", co.nodeKubeconfig, "--node-ip", co.nodeIP}
	ctx := context.Background()
	// A fresh Node object for each kubelet.
	if err := api.CoreV1().Nodes().Delete(ctx, co.nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return res, err
	}
	defer func() {
		k.stop()
		res.Log = summarizeLog(k.LogPath)
		removeBenchPods(c, true)
		_ = api.CoreV1().Nodes().Delete(context.Background(), co.nodeName, metav1.DeleteOptions{})
	}()
	log.Printf("%s cluster: node %s, log %s", fl.Name, k.NodeName, k.LogPath)
	if err := k.start(); err != nil {
		return res, err
	}
	if _, err := k.waitHealthy(60 * time.Second); err != nil {
		return res, err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, err = pollUntil(wctx, 200*time.Millisecond, func() bool {
		n, err := api.CoreV1().Nodes().Get(wctx, co.nodeName, metav1.GetOptions{})
		return err == nil && nodeReady(n) == ""
	})
	cancel()
	if err != nil {
		return res, fmt.Errorf("node %s not Ready within 2 minutes: %w", co.nodeName, err)
	}
	// Let registration and the first status updates pass, then warm up
	// (the first namespace and pod of a fresh node: the controllers'
	// caches, the node's informers) with one pod, not measured.
	time.Sleep(5 * time.Second)
	warm := co
	warm.idle = 0
	if _, err := runKubeletBatch(k, api, warm, 1); err != nil {
		return res, fmt.Errorf("warm-up pod: %w", err)
	}
	for _, n := range co.batches {
		b, err := runKubeletBatch(k, api, co, n)
		res.Batches = append(res.Batches, b)
		if err != nil {
			return res, fmt.Errorf("batch of %d: %w", n, err)
		}
		log.Printf("%s cluster %d pods: all Ready %s ms (p50 %s), pods gone %s ms, ns deleted %s ms, CPU start %s ms, idle %s, RSS %s (HWM %s), requests start/idle/delete %d/%d/%d, healthz failures %d/%d, node not Ready %d, relist mean %.2fs",
			fl.Name, n, ms(b.AllReady), ms(b.PodReady.Median), ms(b.PodsGone), ms(b.Deleted), ms(b.StartCPU), cpuPct(b.IdleCPU, b.Idle), mib(b.RSSkB), mib(b.HWMkB),
			b.StartRequests, b.IdleRequests, b.DeleteRequests, b.HealthzFailures, b.HealthzPolls, len(b.NodeNotReady), b.RelistMean)
	}
	return res, nil
}

func nodeReady(n *v1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status == v1.ConditionTrue {
				return ""
			}
			return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return "no Ready condition"
}

func benchPod(name, node, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: v1.PodSpec{
			NodeName: node,
			// The default grace period (30 s) and the default service
			// account's token (a projected volume), as users' pods have;
			// the image exits on SIGTERM, so deletion measures the kubelet.
			Containers: []v1.Container{{Name: "pause", Image: image, ImagePullPolicy: v1.PullIfNotPresent}},
		},
	}
}

// healthWatch polls the kubelet's /healthz every second and watches the
// node's Ready condition until stopped.
type healthWatch struct {
	polls, failures atomic.Int64
	mu              sync.Mutex
	notReady        []string
	stop            context.CancelFunc
	done            sync.WaitGroup
}

func watchHealth(k *kubelet, api kubernetes.Interface, node string) *healthWatch {
	ctx, cancel := context.WithCancel(context.Background())
	h := &healthWatch{stop: cancel}
	h.done.Add(2)
	go func() {
		defer h.done.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			h.polls.Add(1)
			resp, err := k.client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.Healthz))
			if err != nil {
				h.failures.Add(1)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				h.failures.Add(1)
			}
		}
	}()
	go func() {
		defer h.done.Done()
		for ctx.Err() == nil {
			w, err := api.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				if n, ok := ev.Object.(*v1.Node); ok {
					if msg := nodeReady(n); msg != "" {
						h.mu.Lock()
						h.notReady = append(h.notReady, time.Now().UTC().Format("15:04:05")+" "+msg)
						h.mu.Unlock()
					}
				}
			}
		}
	}()
	return h
}

func (h *healthWatch) finish(b *clusterBatch) {
	h.stop()
	h.done.Wait()
	b.HealthzPolls, b.HealthzFailures = int(h.polls.Load()), int(h.failures.Load())
	b.NodeNotReady = h.notReady
}

// kubeletMetrics reads the kubelet's /metrics over HTTPS with the admin's
// client certificate (its serving certificate is self-signed).
func kubeletMetrics(k *kubelet, co clusterOptions) (map[string]*dto.MetricFamily, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(co.pkiDir, "admin.crt"), filepath.Join(co.pkiDir, "admin.key"))
	if err != nil {
		return nil, err
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
	resp, err := cl.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", k.Port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// relistHistogram is the PLEG relist interval histogram's count, sum and
// cumulative buckets.
type relistHistogram struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64
}

func readRelist(k *kubelet, co clusterOptions) relistHistogram {
	h := relistHistogram{buckets: map[float64]uint64{}}
	mf, err := kubeletMetrics(k, co)
	if err != nil {
		return h
	}
	f := mf["kubelet_pleg_relist_interval_seconds"]
	if f == nil {
		return h
	}
	for _, m := range f.Metric {
		hg := m.GetHistogram()
		if hg == nil {
			continue
		}
		h.count += hg.GetSampleCount()
		h.sum += hg.GetSampleSum()
		for _, b := range hg.Bucket {
			h.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	return h
}

// relistDelta is the mean relist interval between two readings and the
// upper bound of the largest bucket that got an observation in between.
func relistDelta(a, b relistHistogram) (mean, maxBucket float64) {
	if n := b.count - a.count; n > 0 {
		mean = (b.sum - a.sum) / float64(n)
	}
	var bounds []float64
	for ub := range b.buckets {
		bounds = append(bounds, ub)
	}
	sort.Float64s(bounds)
	total := b.count - a.count
	for _, ub := range bounds {
		if b.buckets[ub]-a.buckets[ub] >= total {
			return mean, ub
		}
	}
	if total > 0 {
		return mean, -1 // above the largest bucket
	}
	return mean, 0
}

func runKubeletBatch(k *kubelet, api kubernetes.Interface, co clusterOptions, n int) (*clusterBatch, error) {
	b := &clusterBatch{Pods: n, Idle: co.idle}
	ctx := context.Background()
	ns := fmt.Sprintf("bench-%s-%d-%s", k.flavor.Name, n, randHex(2))
	if _, err := api.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return b, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err := pollUntil(wctx, 100*time.Millisecond, func() bool {
		_, err := api.CoreV1().ServiceAccounts(ns).Get(wctx, "default", metav1.GetOptions{})
		return err == nil
	})
	cancel()
	if err != nil {
		return b, fmt.Errorf("no default service account in %s: %w", ns, err)
	}
	health := watchHealth(k, api, co.nodeName)
	defer health.finish(b)
	deleted := false
	defer func() {
		if !deleted {
			// A failed batch: its pods go at once (grace 0, no kubelet
			// confirmation needed), or the next kubelet to join as the node
			// would be handed them.
			forceDeleteNamespace(api, ns)
		}
	}()
	relist0 := readRelist(k, co)

	// The watch runs before the first create, so no Ready is missed.
	rctx, rcancel := context.WithTimeout(ctx, co.timeout)
	defer rcancel()
	w, err := api.CoreV1().Pods(ns).Watch(rctx, metav1.ListOptions{})
	if err != nil {
		return b, err
	}
	created := make([]time.Time, n)
	var createdMu sync.Mutex
	s0, err := k.sample()
	if err != nil {
		return b, err
	}
	t0 := time.Now()
	createErr := make(chan error, 1)
	go func() {
		sem := make(chan struct{}, co.inflight)
		var wg sync.WaitGroup
		var once sync.Once
		for i := range n {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				name := fmt.Sprintf("pod-%03d", i)
				at := time.Now()
				createdMu.Lock()
				created[i] = at
				createdMu.Unlock()
				if _, err := api.CoreV1().Pods(ns).Create(rctx, benchPod(name, co.nodeName, co.image), metav1.CreateOptions{}); err != nil {
					once.Do(func() { createErr <- err })
				}
			}()
		}
		wg.Wait()
		close(createErr)
	}()
	readyAt := map[string]time.Time{}
	var lastReady time.Time
	for len(readyAt) < n {
		select {
		case err := <-createErr:
			if err != nil {
				return b, fmt.Errorf("create: %w", err)
			}
			createErr = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return b, fmt.Errorf("%d of %d pods Ready when the watch ended (after %v)", len(readyAt), n, co.timeout)
			}
			if ev.Type == watch.Error {
				return b, fmt.Errorf("watch: %v", ev.Object)
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok || !podReady(p) {
				continue
			}
			if _, seen := readyAt[p.Name]; !seen {
				now := time.Now()
				readyAt[p.Name], lastReady = now, now
			}
		}
	}
	w.Stop()
	b.AllReady = lastReady.Sub(t0)
	var per []time.Duration
	for name, at := range readyAt {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "pod-"))
		per = append(per, at.Sub(created[i]))
	}
	b.PodReady = summarize(per)
	b.PodReady.Samples = nil
	s1, err := k.sample()
	if err != nil {
		return b, err
	}
	b.StartCPU = s1.CPU - s0.CPU
	tReady := time.Now()

	// Idle with the pods running.
	time.Sleep(co.idle)
	if err := k.alive(); err != nil {
		return b, err
	}
	s2, err := k.sample()
	if err != nil {
		return b, err
	}
	tIdle := time.Now()
	b.IdleCPU, b.RSSkB, b.HWMkB = s2.CPU-s1.CPU, s2.RSSkB, s2.HWMkB
	b.RelistMean, b.RelistMaxBucket = relistDelta(relist0, readRelist(k, co))

	// Deletion: the namespace, until it is gone.
	t1 := time.Now()
	if err := api.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return b, err
	}
	dctx, dcancel := context.WithTimeout(ctx, co.timeout)
	defer dcancel()
	goneAt, err := pollUntil(dctx, 100*time.Millisecond, func() bool {
		if b.PodsGone == 0 {
			if l, err := api.CoreV1().Pods(ns).List(dctx, metav1.ListOptions{}); err == nil && len(l.Items) == 0 {
				b.PodsGone = time.Since(t1)
			}
		}
		_, err := api.CoreV1().Namespaces().Get(dctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if err != nil {
		left, _ := api.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return b, fmt.Errorf("namespace %s not gone within %v (%d pods left)", ns, co.timeout, len(left.Items))
	}
	b.Deleted = goneAt.Sub(t1)
	deleted = true
	s3, err := k.sample()
	if err != nil {
		return b, err
	}
	b.DeleteCPU = s3.CPU - s2.CPU
	tGone := time.Now()
	// The audit log is written in batches: give it time to catch up.
	time.Sleep(2 * time.Second)
	counts, byVerb, err := countAudit(co.auditLog, "system:node:"+co.nodeName, []time.Time{t0, tReady, tIdle, t1, tGone})
	if err != nil {
		b.Errors = append(b.Errors, "audit log: "+err.Error())
	}
	b.StartRequests, b.IdleRequests, b.DeleteRequests = counts[0], counts[1], counts[3]
	b.IdleByVerb = byVerb[1]
	// Settle before the next batch.
	time.Sleep(3 * time.Second)
	return b, nil
}

// forceDeleteNamespace deletes the namespace's pods with grace 0 and the
// namespace, without waiting.
func forceDeleteNamespace(api kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := api.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{}); err != nil {
		log.Printf("force-delete the pods of %s: %v", ns, err)
	}
	if err := api.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		log.Printf("delete namespace %s: %v", ns, err)
	}
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// auditEvent is the part of an audit.k8s.io/v1 Event the count needs.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestReceived metav1.MicroTime `json:"requestReceivedTimestamp"`
}

// countAudit counts the user's requests (one per request: the
// ResponseStarted stage of a watch, ResponseComplete of the rest) received
// in each window [bounds[i], bounds[i+1]), and per window by verb and
// resource.
func countAudit(path, user string, bounds []time.Time) ([]int, []map[string]int, error) {
	counts := make([]int, len(bounds)-1)
	byVerb := make([]map[string]int, len(bounds)-1)
	for i := range byVerb {
		byVerb[i] = map[string]int{}
	}
	if path == "" {
		return counts, byVerb, fmt.Errorf("no audit log given")
	}
	f, err := os.Open(path)
	if err != nil {
		return counts, byVerb, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), user) {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil || ev.User.Username != user {
			continue
		}
		if !(ev.Stage == "ResponseComplete" && ev.Verb != "watch" || ev.Stage == "ResponseStarted" && ev.Verb == "watch") {
			continue
		}
		at := ev.RequestReceived.Time
		for i := 0; i+1 < len(bounds); i++ {
			if !at.Before(bounds[i]) && at.Before(bounds[i+1]) {
				counts[i]++
				key := ev.Verb
				if ev.ObjectRef != nil {
					key += " " + ev.ObjectRef.Resource
					if ev.ObjectRef.Subresource != "" {
						key += "/" + ev.ObjectRef.Subresource
					}
				}
				byVerb[i][key]++
				break
			}
		}
	}
	return counts, byVerb, sc.Err()
}

// runRawBatches starts each batch straight on the runtime (sandbox and one
// container per pod, -cluster-inflight at a time), then stops and removes
// it the same way.
func runRawBatches(c *cri, o options, co clusterOptions) (*clusterResult, error) {
	res := &clusterResult{Name: "raw CRI", Runtime: c.version()}
	node := "bench-rawcl-" + randHex(3)
	logRoot := filepath.Join(o.workDir, "rawcl-logs")
	for _, n := range co.batches {
		b := &clusterBatch{Pods: n}
		res.Batches = append(res.Batches, b)
		ids := make([]string, n)
		per := make([]time.Duration, n)
		errs := make(chan error, n)
		sem := make(chan struct{}, co.inflight)
		var wg sync.WaitGroup
		t0 := time.Now()
		var last atomic.Int64
		for i := range n {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				r, id, err := c.rawStart(rawPod{Name: fmt.Sprintf("rawcl-%03d", i), Node: node, LogRoot: logRoot, Image: co.image})
				ids[i] = id
				if err != nil {
					errs <- err
					return
				}
				per[i] = r.Total
				end := r.Began.Add(r.Total).Sub(t0)
				for {
					cur := last.Load()
					if int64(end) <= cur || last.CompareAndSwap(cur, int64(end)) {
						break
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return res, fmt.Errorf("raw batch of %d: %w", n, err)
		}
		b.AllReady = time.Duration(last.Load())
		b.PodReady = summarize(per)
		b.PodReady.Samples = nil
		time.Sleep(5 * time.Second)
		t1 := time.Now()
		for _, id := range ids {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				ctx, cancel := callCtx()
				defer cancel()
				if err := c.removeSandbox(ctx, id); err != nil {
					log.Printf("raw: remove %s: %v", id, err)
				}
			}()
		}
		wg.Wait()
		b.Deleted = time.Since(t1)
		log.Printf("raw CRI %d pods: all running %s ms (p50 %s), removed %s ms", n, ms(b.AllReady), ms(b.PodReady.Median), ms(b.Deleted))
		time.Sleep(3 * time.Second)
	}
	return res, nil
}
