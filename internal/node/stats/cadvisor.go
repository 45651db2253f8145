package stats

import (
	"context"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/runtime/cri"
	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
)

// Machine is what the machine_* families and cadvisor_version_info of
// /metrics/cadvisor report.
type Machine struct {
	MachineID, SystemUUID, BootID string
	KernelVersion, OSImage        string
	// Cores is the logical CPU count; PhysicalCores and Sockets come from
	// the CPU topology (ReadCPUTopology).
	Cores, PhysicalCores, Sockets int
	MemoryBytes, SwapBytes        int64
}

// processSampleAge is how long process counts (processes, open files,
// sockets) are reused: counting them walks /proc/<pid>/fd of every process,
// and cAdvisor refreshes them only on its 10 s housekeeping too.
const processSampleAge = 10 * time.Second

// specSampleAge is how long a cgroup's configuration (shares, quota,
// limits, creation time: the container_spec_* families) is reused; the
// kubelet changes it rarely (a resize) and cAdvisor re-reads it on its
// housekeeping only.
const specSampleAge = time.Minute

// cadvisorEntry is one cgroup exported on /metrics/cadvisor with its labels.
type cadvisorEntry struct {
	ID                                     string // the cgroup path: label id
	Container, Image, Name, Namespace, Pod string
	// NetPid is the process whose network namespace is this cgroup's (the
	// sandbox of a pod, 1 for the root); 0 for none.
	NetPid int
	Root   bool
}

// cadvisorScrape is what one scrape read: per entry its cgroup and
// process figures, and the root's network and filesystems.
type cadvisorScrape struct {
	Now      time.Time
	Entries  []cadvisorEntry
	Cgroups  []cgroupFull
	Procs    []processCounts
	Networks [][]netDeviceFull // by entry; nil when none
	RootFs   []rootFilesystem
	Ulimit   int64 // max open files soft limit of pid 1; -1 unlimited
	Err      bool  // listing the containers failed
}

// cadvisorState keeps, between scrapes, what does not change quickly.
type cadvisorState struct {
	mu sync.Mutex
	// procs caches process counts by cgroup path, specs their
	// configuration, dirs their directories.
	procs map[string]procSample
	specs map[string]specSample
	dirs  map[string]*cgroupDirs
	// images maps an image ID to its first repo tag (CRI ListImages).
	images map[string]string
	// files keeps the files every scrape reads open between scrapes.
	files *fileCache
	// mounts are the block-device mounts read at mountsAt.
	mounts   []rootFilesystem
	mountsAt time.Time
	// sandboxImage is the runtime's sandbox image, asked once.
	sandboxImage     string
	sandboxImageRead bool
}

type specSample struct {
	at   time.Time
	spec cgroupSpec
}

type procSample struct {
	at time.Time
	pc processCounts
}

// CadvisorHandler serves /metrics/cadvisor: cAdvisor's container_* and
// machine_* families as the upstream kubelet exposes them (its
// includedMetrics and label function), read from the cgroup tree, procfs
// and the CRI on each scrape. Written directly in the text exposition
// format: with a hundred pods a scrape has tens of thousands of series, and
// building client_golang metrics for each would cost more than reading them.
func (p *Provider) CadvisorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
		defer cancel()
		s := p.cadvisorScrape(ctx)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		body, done := compressedBody(w, r)
		bw := newExpoWriter(body)
		writeCadvisor(bw, s, p.cfg.Machine)
		err := bw.flush()
		if derr := done(); err == nil {
			err = derr
		}
		if err != nil {
			klog.FromContext(ctx).V(4).Info("Writing /metrics/cadvisor failed", "err", err)
		}
	})
}

// cadvisorScrape lists the exported cgroups and reads them.
func (p *Provider) cadvisorScrape(ctx context.Context) *cadvisorScrape {
	now := p.clock.Now()
	s := &cadvisorScrape{Now: now, Ulimit: -1}
	entries, err := p.cadvisorEntries(ctx)
	if err != nil {
		klog.FromContext(ctx).Info("Couldn't get containers", "err", err)
		s.Err = true
	}
	s.Entries = entries
	files := p.cadvisor.files
	if !files.acquire() {
		files = nil // another scrape reads through it: read the plain way
	} else {
		defer files.release()
	}
	r := newReader(files)
	s.Cgroups = make([]cgroupFull, 0, len(entries))
	s.Procs = make([]processCounts, len(entries))
	s.Networks = make([][]netDeviceFull, len(entries))
	kept := entries[:0]
	for _, e := range entries {
		spec, dirs := p.cadvisor.kept(p.cgroups, e.ID, now)
		c, ok := readFull(r, dirs, now, spec)
		if !ok {
			continue // gone since listed
		}
		if spec == nil {
			p.cadvisor.keepSpec(e.ID, c.Spec, now)
		}
		i := len(kept)
		kept = append(kept, e)
		s.Cgroups = append(s.Cgroups, c)
		s.Procs[i] = p.processCounts(r, e, now)
		if e.NetPid > 0 {
			if data, ok := r.keptFor(e.Name, p.procRoot, itoa(e.NetPid), "net", "dev"); ok {
				s.Networks[i] = parseNetDevFull(data)
				sort.Slice(s.Networks[i], func(a, b int) bool { return s.Networks[i][a].Name < s.Networks[i][b].Name })
			}
		}
		if e.Root {
			s.RootFs = readRootFilesystems(r, p.procRoot, p.cadvisor.blockMounts(r, p.procRoot, now))
			s.Ulimit = readMaxOpenFiles(r, p.procRoot+"/1/limits")
		}
	}
	s.Entries = kept
	s.Procs = s.Procs[:len(kept)]
	s.Networks = s.Networks[:len(kept)]
	p.cadvisor.prune(kept, now)
	return s
}

// processCounts returns the cgroup's process counts, recounted at most
// every processSampleAge.
func (p *Provider) processCounts(r *reader, e cadvisorEntry, now time.Time) processCounts {
	st := &p.cadvisor
	st.mu.Lock()
	if ps, ok := st.procs[e.ID]; ok && now.Sub(ps.at) < processSampleAge {
		st.mu.Unlock()
		return ps.pc
	}
	st.mu.Unlock()
	procs := p.cgroups.dir("pids", e.ID)
	if p.cgroups.Unified || procs == "" {
		procs = p.cgroups.dir("memory", e.ID)
	}
	pc := countProcesses(r, procs+"/cgroup.procs", p.procRoot)
	st.mu.Lock()
	if st.procs == nil {
		st.procs = map[string]procSample{}
	}
	st.procs[e.ID] = procSample{at: now, pc: pc}
	st.mu.Unlock()
	return pc
}

// kept returns the cgroup's kept configuration while it is fresh (else
// nil), and its directories, joined once for the cgroup's life.
func (st *cadvisorState) kept(l cgroupLayout, id string, now time.Time) (*cgroupSpec, *cgroupDirs) {
	st.mu.Lock()
	defer st.mu.Unlock()
	d, ok := st.dirs[id]
	if !ok {
		if st.dirs == nil {
			st.dirs = map[string]*cgroupDirs{}
		}
		dirs := l.dirsOf(id)
		d = &dirs
		st.dirs[id] = d
	}
	if s, ok := st.specs[id]; ok && now.Sub(s.at) < specSampleAge {
		return &s.spec, d
	}
	return nil, d
}

func (st *cadvisorState) keepSpec(id string, spec cgroupSpec, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.specs == nil {
		st.specs = map[string]specSample{}
	}
	st.specs[id] = specSample{at: now, spec: spec}
}

// blockMounts returns the machine's block-device mounts, read from
// mountinfo again at most every specSampleAge: a node with a hundred pods
// has hundreds of mounts (each container's binds) and reading and parsing
// them was a tenth of a scrape, for a list that changes when a disk is
// mounted. (cAdvisor reads it once, when it starts.)
func (st *cadvisorState) blockMounts(r *reader, procRoot string, now time.Time) []rootFilesystem {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mounts != nil && now.Sub(st.mountsAt) < specSampleAge {
		return st.mounts
	}
	data, ok := r.read(procRoot, "self", "mountinfo")
	if !ok {
		return nil
	}
	st.mounts, st.mountsAt = blockMounts(data), now
	if st.mounts == nil {
		st.mounts = []rootFilesystem{}
	}
	return st.mounts
}

// prune forgets what is kept of cgroups no longer exported.
func (st *cadvisorState) prune(kept []cadvisorEntry, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.procs) <= len(kept) && len(st.specs) <= len(kept) && len(st.dirs) <= len(kept) {
		return
	}
	live := make(map[string]bool, len(kept))
	for _, e := range kept {
		live[e.ID] = true
	}
	for id := range st.procs {
		if !live[id] {
			delete(st.procs, id)
		}
	}
	for id := range st.specs {
		if !live[id] {
			delete(st.specs, id)
		}
	}
	for id := range st.dirs {
		if !live[id] {
			delete(st.dirs, id)
		}
	}
}

// cadvisorEntries is the root cgroup, the node-allocatable cgroup and its
// QoS children, and for every pod sandbox the runtime has, its pod cgroup,
// its sandbox (pause) cgroup and its containers' cgroups: the cgroups the
// upstream kubelet's cAdvisor watches (the root and the kubelet's
// cgroupRoots), labelled by its containerd handler and label function.
func (p *Provider) cadvisorEntries(ctx context.Context) ([]cadvisorEntry, error) {
	out := []cadvisorEntry{{ID: "/", Root: true, NetPid: 1}}
	if kp := p.cfg.NodeAllocatableCgroup; kp != "" && !isRoot(kp) {
		for _, c := range []string{kp, kp + "/burstable", kp + "/besteffort"} {
			out = append(out, cadvisorEntry{ID: c})
		}
	}
	pods, err := p.runtimePods(ctx)
	if err != nil {
		return out, err
	}
	images := p.imageNames(ctx, pods)
	sandboxImage := p.runtimeSandboxImage(ctx)
	chosen := map[string]bool{}
	for _, pod := range pods {
		for _, sb := range pod.Sandboxes {
			if !sb.Ready {
				continue
			}
			info, ok := p.sandboxInfo(ctx, sb.ID)
			if !ok || info.CgroupsPath == "" {
				continue
			}
			chosen[sb.ID] = true
			if pc, ok := podCgroupOf(info.CgroupsPath, string(pod.UID)); ok {
				out = append(out, cadvisorEntry{ID: pc, Pod: pod.Name, Namespace: pod.Namespace})
			}
			out = append(out, cadvisorEntry{
				ID: cgroupPathOf(info.CgroupsPath), Name: sb.ID, Image: sandboxImage,
				Pod: pod.Name, Namespace: pod.Namespace, NetPid: info.Pid,
			})
			for _, c := range pod.Containers {
				if c.SandboxID != sb.ID || c.State != kuberuntime.StateRunning {
					continue
				}
				out = append(out, cadvisorEntry{
					ID:   cgroupPathOf(containerCgroupsPath(info.CgroupsPath, sb.ID, c.ID)),
					Name: c.ID, Image: images[c.ImageRef], Container: c.Name,
					Pod: pod.Name, Namespace: pod.Namespace,
				})
			}
		}
	}
	p.keepSandboxInfo(func(id string) bool { return chosen[id] })
	sortEntries(out)
	return out, nil
}

// scrapeListingAge is how old a shared listing of the runtime's pods a
// scrape takes (Config.RecentPods): the PLEG relists every second, so with
// the relist's own time this is the last one unless relisting lags.
const scrapeListingAge = 2 * time.Second

// runtimePods is the runtime's pods: the PLEG's last relist when fresh,
// else a listing of the ready sandboxes and running containers.
func (p *Provider) runtimePods(ctx context.Context) ([]*kuberuntime.RunningPod, error) {
	if p.cfg.RecentPods != nil {
		if pods, ok := p.cfg.RecentPods(scrapeListingAge); ok {
			return pods, nil
		}
	}
	return kuberuntime.ListPods(ctx, p.cfg.Runtime, false)
}

// imageNames maps the image IDs of containers to their first repo tag,
// which is what containerd names a container's image; the runtime is asked
// again only when a container runs an image not seen yet.
func (p *Provider) imageNames(ctx context.Context, pods []*kuberuntime.RunningPod) map[string]string {
	st := &p.cadvisor
	st.mu.Lock()
	known := st.images
	st.mu.Unlock()
	missing := known == nil
	for _, pod := range pods {
		for _, c := range pod.Containers {
			if _, ok := known[c.ImageRef]; !ok && c.State == kuberuntime.StateRunning {
				missing = true
				break
			}
		}
	}
	if !missing {
		return known
	}
	resp, err := p.cfg.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		klog.FromContext(ctx).V(4).Info("ListImages failed; image labels stay empty", "err", err)
		return known
	}
	names := make(map[string]string, len(resp.GetImages()))
	for _, im := range resp.GetImages() {
		name := ""
		if tags := im.GetRepoTags(); len(tags) > 0 {
			name = tags[0]
		} else if digests := im.GetRepoDigests(); len(digests) > 0 {
			name = digests[0]
		}
		names[im.GetId()] = name
	}
	// Containers name images by ID or by digest reference; map both.
	for _, im := range resp.GetImages() {
		for _, d := range im.GetRepoDigests() {
			names[d] = names[im.GetId()]
		}
	}
	for _, pod := range pods {
		for _, c := range pod.Containers {
			if _, ok := names[c.ImageRef]; !ok {
				names[c.ImageRef] = "" // not listed: do not ask again for it
			}
		}
	}
	st.mu.Lock()
	st.images = names
	st.mu.Unlock()
	return names
}

// runtimeSandboxImage is the image the runtime runs sandboxes from (the
// sandboxImage of its verbose status config), asked once.
func (p *Provider) runtimeSandboxImage(ctx context.Context) string {
	st := &p.cadvisor
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.sandboxImageRead {
		img, err := cri.SandboxImage(ctx, p.cfg.Runtime)
		if err == nil {
			st.sandboxImage, st.sandboxImageRead = img, true
		}
	}
	return st.sandboxImage
}

// containerCgroupsPath is the OCI cgroupsPath of a container of the
// sandbox: containerd names them like its sandbox's, with the container's
// ID in place of the sandbox's.
func containerCgroupsPath(sandboxPath, sandboxID, containerID string) string {
	if i := strings.LastIndex(sandboxPath, sandboxID); i >= 0 {
		return sandboxPath[:i] + containerID + sandboxPath[i+len(sandboxID):]
	}
	return path.Join(path.Dir(sandboxPath), containerID)
}

// cgroupPathOf turns an OCI cgroupsPath into the cgroup's path: a cgroupfs
// path as is, a systemd "slice:prefix:name" as the scope under the slice.
func cgroupPathOf(cgroupsPath string) string {
	if strings.HasPrefix(cgroupsPath, "/") {
		return path.Clean(cgroupsPath)
	}
	parts := strings.Split(cgroupsPath, ":")
	if len(parts) != 3 {
		return path.Clean("/" + cgroupsPath)
	}
	return path.Join(expandSlice(parts[0]), parts[1]+"-"+parts[2]+".scope")
}

// sortEntries orders entries by cgroup path, as cAdvisor lists them.
func sortEntries(es []cadvisorEntry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].ID < es[j].ID })
}
