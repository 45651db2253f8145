package userns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
)

// Defaults, as upstream's.
const (
	// DefaultIDsPerPod is userNamespaces.idsPerPod's default.
	DefaultIDsPerPod = 65536
	// unit is what idsPerPod must be a multiple of.
	unit = 65536
	// mappingsFile is the file in a pod's directory holding its mappings.
	mappingsFile = "userns"
	// kubeletUser is the user whose subordinate IDs the kubelet uses.
	kubeletUser = "kubelet"
)

// Config is what a Manager needs.
type Config struct {
	// PodsDir is <root-dir>/pods (required).
	PodsDir string
	// IDsPerPod is userNamespaces.idsPerPod; 0 means DefaultIDsPerPod.
	IDsPerPod uint32
	// MaxPods is maxPods: the kubelet's range must hold that many pods.
	MaxPods int
	// FirstID and Length are the kubelet's range of host IDs
	// (KubeletMappings gives upstream's choice).
	FirstID, Length uint32
	// Runtime reports the runtime handlers' features (required).
	Runtime runtimeapi.RuntimeServiceClient
}

// mapping is one ID mapping, in upstream's file format.
type mapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// fileContent is the pod's "userns" file.
type fileContent struct {
	UIDMappings []mapping `json:"uidMappings"`
	GIDMappings []mapping `json:"gidMappings"`
}

// Manager hands out and records pods' ID ranges. Safe for concurrent use.
type Manager struct {
	cfg    Config
	off    int // index of the first range (FirstID / IDsPerPod)
	n      int // number of ranges
	mu     sync.Mutex
	used   []bool
	usedBy map[types.UID]uint32 // first host ID of each pod's range
}

// New validates the range as upstream does and records the ranges pods on
// disk already have.
func New(cfg Config) (*Manager, error) {
	if cfg.IDsPerPod == 0 {
		cfg.IDsPerPod = DefaultIDsPerPod
	}
	per := cfg.IDsPerPod
	switch {
	case per%unit != 0:
		return nil, fmt.Errorf("kubelet user namespace length %v is not a multiple of %d", per, unit)
	case cfg.FirstID%per != 0:
		return nil, fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", cfg.FirstID, per)
	case cfg.FirstID < per:
		return nil, fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", cfg.FirstID, per)
	case cfg.Length%per != 0:
		return nil, fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", cfg.Length, per)
	case cfg.Length/per < uint32(cfg.MaxPods):
		return nil, fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", cfg.MaxPods)
	}
	m := &Manager{cfg: cfg, off: int(cfg.FirstID / per), n: int(cfg.Length / per), usedBy: map[types.UID]uint32{}}
	m.used = make([]bool, m.n)
	entries, err := os.ReadDir(cfg.PodsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read pods from disk: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid := types.UID(e.Name())
		content, err := os.ReadFile(m.file(uid))
		if errors.Is(err, os.ErrNotExist) || (err == nil && len(content) == 0) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", uid, err)
		}
		if _, err := m.parseAndRecord(uid, content); err != nil {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", uid, err)
		}
	}
	klog.V(2).InfoS("User namespace manager ready", "firstID", cfg.FirstID, "length", cfg.Length, "idsPerPod", per, "podsWithMappings", len(m.usedBy))
	return m, nil
}

func (m *Manager) file(uid types.UID) string {
	return filepath.Join(m.cfg.PodsDir, string(uid), mappingsFile)
}

// parseAndRecord checks a pod's file as upstream (one mapping, the same
// for UIDs and GIDs, container ID 0) and records its range.
func (m *Manager) parseAndRecord(uid types.UID, content []byte) (fileContent, error) {
	var f fileContent
	if err := json.Unmarshal(content, &f); err != nil {
		return f, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	switch {
	case len(f.UIDMappings) != 1:
		return f, errors.New("invalid user namespace configuration: no more than one mapping allowed.")
	case len(f.UIDMappings) != len(f.GIDMappings):
		return f, errors.New("invalid user namespace configuration: GID and UID mappings should be identical.")
	case f.UIDMappings[0] != f.GIDMappings[0]:
		return f, errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case f.UIDMappings[0].ContainerID != 0:
		return f, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	case f.GIDMappings[0].ContainerID != 0:
		return f, errors.New("invalid user namespace configuration: GID 0 must be mapped")
	}
	return f, m.record(uid, f.UIDMappings[0].HostID, f.UIDMappings[0].Length)
}

// record marks [from, from+length) as the pod's.
func (m *Manager) record(uid types.UID, from, length uint32) error {
	per := m.cfg.IDsPerPod
	if length != per {
		return fmt.Errorf("wrong user namespace length %v", length)
	}
	if from%per != 0 {
		return fmt.Errorf("wrong user namespace offset specified %v", from)
	}
	prev, found := m.usedBy[uid]
	if found && prev != from {
		return fmt.Errorf("different user namespace range already used by pod %q", uid)
	}
	i := int(from/per) - m.off
	if i < 0 || i >= m.n {
		return fmt.Errorf("id %v is out of range", from)
	}
	if found {
		return nil
	}
	if m.used[i] {
		return fmt.Errorf("range picked for pod %q already taken", uid)
	}
	m.used[i] = true
	m.usedBy[uid] = from
	return nil
}

// allocate picks a free range at random, as upstream's allocation bitmap
// (a random start, then the next free one).
func (m *Manager) allocate(uid types.UID) (uint32, error) {
	start := rand.IntN(m.n)
	for k := 0; k < m.n; k++ {
		i := (start + k) % m.n
		if !m.used[i] {
			m.used[i] = true
			first := uint32(i+m.off) * m.cfg.IDsPerPod
			m.usedBy[uid] = first
			return first, nil
		}
	}
	return 0, errors.New("could not find an empty slot to allocate a user namespace")
}

// releaseLocked frees the pod's range and removes its file.
func (m *Manager) releaseLocked(uid types.UID) {
	from, ok := m.usedBy[uid]
	if !ok {
		return
	}
	delete(m.usedBy, uid)
	m.used[int(from/m.cfg.IDsPerPod)-m.off] = false
	_ = os.Remove(m.file(uid))
	klog.V(3).InfoS("Released the pod's user namespace", "podUID", uid)
}

// Release frees a removed pod's range.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(uid)
}

// CleanupOrphans frees the ranges of pods not in keep (known to the
// kubelet or running on the runtime), as upstream's
// CleanupOrphanedPodUsernsAllocations.
func (m *Manager) CleanupOrphans(keep map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.usedBy {
		if !keep[uid] {
			m.releaseLocked(uid)
		}
	}
}

// Options are the CRI user-namespace options of pod for its sandbox and
// containers: node mode unless hostUsers is false; then the pod's range
// (recorded, or a new one written to its directory), on a runtime handler
// that supports user namespaces (upstream's
// GetOrCreateUserNamespaceMappings, with its errors).
func (m *Manager) Options(ctx context.Context, pod *v1.Pod, runtimeHandler string) (*runtimeapi.UserNamespace, error) {
	if pod == nil || pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	if ok, err := m.handlerSupportsUserns(ctx, runtimeHandler); err != nil || !ok {
		msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if runtimeHandler != "" {
			msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", runtimeHandler)
		}
		if err != nil {
			return nil, fmt.Errorf("%v: %w", msg, err)
		}
		return nil, errors.New(msg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	content, err := os.ReadFile(m.file(pod.UID))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var f fileContent
	if len(content) > 0 {
		if f, err = m.parseAndRecord(pod.UID, content); err != nil {
			return nil, fmt.Errorf("user namespace: %w", err)
		}
	} else if f, err = m.create(pod.UID); err != nil {
		return nil, fmt.Errorf("create user namespace: %w", err)
	}
	out := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD}
	for _, u := range f.UIDMappings {
		out.Uids = append(out.Uids, &runtimeapi.IDMapping{HostId: u.HostID, ContainerId: u.ContainerID, Length: u.Length})
	}
	for _, g := range f.GIDMappings {
		out.Gids = append(out.Gids, &runtimeapi.IDMapping{HostId: g.HostID, ContainerId: g.ContainerID, Length: g.Length})
	}
	return out, nil
}

// create allocates a range and writes it to the pod's directory (atomic,
// and the directory synced so it survives a crash).
func (m *Manager) create(uid types.UID) (fileContent, error) {
	first, err := m.allocate(uid)
	if err != nil {
		return fileContent{}, err
	}
	mp := mapping{HostID: first, ContainerID: 0, Length: m.cfg.IDsPerPod}
	f := fileContent{UIDMappings: []mapping{mp}, GIDMappings: []mapping{mp}}
	if err := m.write(uid, f); err != nil {
		m.releaseLocked(uid)
		return fileContent{}, err
	}
	klog.V(2).InfoS("Allocated a user namespace to the pod", "podUID", uid, "hostID", first, "length", m.cfg.IDsPerPod)
	return f, nil
}

func (m *Manager) write(uid types.UID, f fileContent) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return atomicfile.Write(m.file(uid), data, 0o644)
}

// handlerSupportsUserns asks the runtime whether the handler supports user
// namespaces: a runtime that reports no handlers (containerd 1.6) does
// not; an unknown handler is an error.
func (m *Manager) handlerSupportsUserns(ctx context.Context, handler string) (bool, error) {
	resp, err := m.cfg.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return false, fmt.Errorf("runtime status: %w", err)
	}
	hs := resp.GetRuntimeHandlers()
	if len(hs) == 0 {
		return false, nil
	}
	for _, h := range hs {
		if h.GetName() == handler {
			return h.GetFeatures().GetUserNamespaces(), nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", handler)
}

// KubeletMappings is the kubelet's range of host IDs, as upstream picks
// it: the single subordinate range getsubids reports for the "kubelet"
// user (the same for UIDs and GIDs), when that user exists and getsubids
// is installed; else every ID from idsPerPod up.
func KubeletMappings(idsPerPod uint32) (first, length uint32, err error) {
	if idsPerPod == 0 {
		idsPerPod = DefaultIDsPerPod
	}
	defFirst, defLen := idsPerPod, uint32((1<<32)-uint64(idsPerPod))
	if _, err := user.Lookup(kubeletUser); err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			klog.V(5).InfoS("User namespaces: user not found, using default mappings", "user", kubeletUser)
			return defFirst, defLen, nil
		}
		return 0, 0, err
	}
	cmd, err := exec.LookPath("getsubids")
	if err != nil {
		klog.V(2).InfoS("User namespaces: executable not found, using default mappings", "executable", "getsubids", "err", err)
		return defFirst, defLen, nil
	}
	uids, err := exec.Command(cmd, kubeletUser).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("error retrieving additional uids for user %q: %w", kubeletUser, err)
	}
	gids, err := exec.Command(cmd, "-g", kubeletUser).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("error retrieving additional gids for user %q", kubeletUser)
	}
	if string(uids) != string(gids) {
		return 0, 0, fmt.Errorf("mismatched subuids and subgids for user %q", kubeletUser)
	}
	return ParseSubIDs(string(uids))
}

// ParseSubIDs parses getsubids' output ("0: kubelet 65536 2147483648"):
// exactly one range.
func ParseSubIDs(input string) (first, length uint32, err error) {
	lines := strings.Split(strings.Trim(input, "\n"), "\n")
	if len(lines) != 1 {
		return 0, 0, fmt.Errorf("error parsing line %q: it must contain only one line", input)
	}
	parts := strings.Fields(lines[0])
	if len(parts) != 4 {
		return 0, 0, fmt.Errorf("invalid line %q", input)
	}
	a, err := strconv.ParseUint(parts[2], 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("error parsing line %q: %w", input, err)
	}
	b, err := strconv.ParseUint(parts[3], 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("error parsing line %q: %w", input, err)
	}
	return uint32(a), uint32(b), nil
}
