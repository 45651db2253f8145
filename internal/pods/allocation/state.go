package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/dump"

	"github.com/seed-kubelet/kubelet/internal/atomicfile"
)

// Checkpoint file names in the kubelet's root directory, as upstream's.
const (
	AllocatedFile = "allocated_pods_state"
	ActuatedFile  = "actuated_pods_state"
)

// PodResources are the resources recorded for one pod: per container (by
// name) and at pod level. The JSON field names are upstream's
// (state.PodResourceInfo has no tags), so each kubelet reads the other's
// checkpoint.
type PodResources struct {
	ContainerResources map[string]v1.ResourceRequirements
	PodLevelResources  *v1.ResourceRequirements
}

// checkpointData is what the checkpoint's data string holds.
type checkpointData struct {
	Entries map[types.UID]PodResources `json:"entries,omitempty"`
}

// checkpointFile is the file: the data as a JSON string and its checksum.
type checkpointFile struct {
	Data     string `json:"data"`
	Checksum uint64 `json:"checksum"`
}

// checksum is upstream's checkpoint checksum: FNV-32a of the spew dump of
// the data string (checkpointmanager/checksum over hashutil.DeepHashObject).
func checksum(data string) uint64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(data))
	return uint64(h.Sum32())
}

// State is a checkpointed record of pod resources. Safe for concurrent use.
type State struct {
	path string // "" keeps it in memory only
	mu   sync.RWMutex
	pods map[types.UID]PodResources
	last uint64 // checksum of what is on disk
}

// NewMemoryState returns a State that is never written to disk.
func NewMemoryState() *State { return &State{pods: map[types.UID]PodResources{}} }

// OpenState reads the checkpoint at path (none is an empty state) and
// keeps it up to date there. A corrupt checkpoint is an error, as
// upstream: the kubelet cannot know what its running pods were given.
func OpenState(path string) (*State, error) {
	s := &State{path: path, pods: map[types.UID]PodResources{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var f checkpointFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, corrupt(path, err)
	}
	if sum := checksum(f.Data); sum != f.Checksum {
		return nil, corrupt(path, fmt.Errorf("checkpoint is corrupted: checksum %d, want %d", f.Checksum, sum))
	}
	var d checkpointData
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		return nil, corrupt(path, fmt.Errorf("failed to get pod resource information: %w", err))
	}
	for uid, pr := range d.Entries {
		s.pods[uid] = pr
	}
	s.last = f.Checksum
	return s, nil
}

func corrupt(path string, err error) error {
	return fmt.Errorf("could not restore state from checkpoint: %w, please drain this node and delete pod resource information checkpoint file %q before restarting Kubelet", err, path)
}

// Pod returns the pod's record (a copy).
func (s *State) Pod(uid types.UID) (PodResources, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	pr, ok := s.pods[uid]
	return pr.clone(), ok
}

// Container returns one container's record.
func (s *State) Container(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.pods[uid].ContainerResources[name]
	return *r.DeepCopy(), ok
}

// Containers returns the pod's records by container name (a copy; nil
// when there is none).
func (s *State) Containers(uid types.UID) map[string]v1.ResourceRequirements {
	s.mu.RLock()
	defer s.mu.RUnlock()
	pr, ok := s.pods[uid]
	if !ok {
		return nil
	}
	return pr.clone().ContainerResources
}

// SetPod replaces the pod's record.
func (s *State) SetPod(uid types.UID, pr PodResources) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[uid] = pr.clone()
	return s.storeLocked()
}

// SetContainer records one container's resources.
func (s *State) SetContainer(uid types.UID, name string, r v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.pods[uid].clone()
	if pr.ContainerResources == nil {
		pr.ContainerResources = map[string]v1.ResourceRequirements{}
	}
	pr.ContainerResources[name] = *r.DeepCopy()
	s.pods[uid] = pr
	return s.storeLocked()
}

// SetPodLevel records the pod-level resources.
func (s *State) SetPodLevel(uid types.UID, r *v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.pods[uid].clone()
	pr.PodLevelResources = r.DeepCopy()
	s.pods[uid] = pr
	return s.storeLocked()
}

// Remove forgets a pod.
func (s *State) Remove(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pods[uid]; !ok {
		return nil
	}
	delete(s.pods, uid)
	return s.storeLocked()
}

// RemoveOrphans forgets every pod not in keep.
func (s *State) RemoveOrphans(keep map[types.UID]bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for uid := range s.pods {
		if !keep[uid] {
			delete(s.pods, uid)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.storeLocked()
}

// UIDs lists the pods recorded.
func (s *State) UIDs() []types.UID {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]types.UID, 0, len(s.pods))
	for uid := range s.pods {
		out = append(out, uid)
	}
	return out
}

// storeLocked writes the checkpoint when it changed: a temporary file,
// fsynced, renamed over the old one.
func (s *State) storeLocked() error {
	if s.path == "" {
		return nil
	}
	data, err := json.Marshal(checkpointData{Entries: s.pods})
	if err != nil {
		return fmt.Errorf("failed to serialize allocations for checkpointing: %w", err)
	}
	f := checkpointFile{Data: string(data), Checksum: checksum(string(data))}
	if f.Checksum == s.last {
		return nil
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, raw, 0o644); err != nil {
		return fmt.Errorf("save checkpoint %s: %w", s.path, err)
	}
	s.last = f.Checksum
	return nil
}

func (pr PodResources) clone() PodResources {
	out := PodResources{PodLevelResources: pr.PodLevelResources.DeepCopy()}
	if pr.ContainerResources != nil {
		out.ContainerResources = make(map[string]v1.ResourceRequirements, len(pr.ContainerResources))
		for k, v := range pr.ContainerResources {
			out.ContainerResources[k] = *v.DeepCopy()
		}
	}
	return out
}
