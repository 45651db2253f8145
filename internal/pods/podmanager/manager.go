package podmanager

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Manager holds the desired pods. Safe for concurrent use.
type Manager struct {
	mu     sync.RWMutex
	byUID  map[types.UID]*v1.Pod
	byName map[string]*v1.Pod
	// mirrors are the API server's mirror pods of static pods, by full
	// name; they are never run, only kept in step with their static pod.
	mirrors map[string]*v1.Pod
}

// NewManager returns an empty Manager.
func NewManager() *Manager {
	return &Manager{byUID: map[types.UID]*v1.Pod{}, byName: map[string]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
}

// FullName is namespace/name.
func FullName(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// AddOrUpdate stores pod (a mirror pod goes to the mirror index).
func (m *Manager) AddOrUpdate(p *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if podutil.IsMirrorPod(p) {
		m.mirrors[FullName(p)] = p
		return
	}
	if old, ok := m.byUID[p.UID]; ok && FullName(old) != FullName(p) {
		delete(m.byName, FullName(old))
	}
	m.byUID[p.UID] = p
	m.byName[FullName(p)] = p
}

// Remove forgets pod.
func (m *Manager) Remove(p *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if podutil.IsMirrorPod(p) {
		if cur, ok := m.mirrors[FullName(p)]; ok && cur.UID == p.UID {
			delete(m.mirrors, FullName(p))
		}
		return
	}
	delete(m.byUID, p.UID)
	if cur, ok := m.byName[FullName(p)]; ok && cur.UID == p.UID {
		delete(m.byName, FullName(p))
		// Another pod may hold the same name (an edited static pod).
		for _, other := range m.byUID {
			if FullName(other) == FullName(p) {
				m.byName[FullName(p)] = other
			}
		}
	}
}

// Get returns the pod with uid.
func (m *Manager) Get(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byUID[uid]
	return p, ok
}

// GetByFullName returns the pod named namespace/name.
func (m *Manager) GetByFullName(namespace, name string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byName[namespace+"/"+name]
	return p, ok
}

// List returns the pods ordered by full name, then UID.
func (m *Manager) List() []*v1.Pod {
	m.mu.RLock()
	out := make([]*v1.Pod, 0, len(m.byUID))
	for _, p := range m.byUID {
		out = append(out, p)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if FullName(out[i]) != FullName(out[j]) {
			return FullName(out[i]) < FullName(out[j])
		}
		return out[i].UID < out[j].UID
	})
	return out
}

// Mirror returns the mirror pod of the static pod p, if the API has one.
func (m *Manager) Mirror(p *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mp, ok := m.mirrors[FullName(p)]
	return mp, ok
}

// OrphanedMirrors lists mirror pods whose static pod is gone, or whose
// hash no longer matches it.
func (m *Manager) OrphanedMirrors() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*v1.Pod
	for name, mp := range m.mirrors {
		sp, ok := m.byName[name]
		if !ok || !podutil.IsStaticPod(sp) || !podutil.IsMirrorOf(mp, sp) {
			out = append(out, mp)
		}
	}
	return out
}
