package statusmanager

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Manager stores pod statuses. Safe for concurrent use.
type Manager struct {
	mu       sync.RWMutex
	statuses map[types.UID]v1.PodStatus
	notify   func(uid types.UID)
	// dirty, when the API sync runs, receives the UIDs whose status changed.
	dirty chan types.UID
}

// NewManager returns an empty Manager. onChange, when not nil, is called
// (outside the lock) after a pod's status changed.
func NewManager(onChange func(uid types.UID)) *Manager {
	return &Manager{statuses: map[types.UID]v1.PodStatus{}, notify: onChange}
}

// Get returns a copy of the pod's status.
func (m *Manager) Get(uid types.UID) (v1.PodStatus, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.statuses[uid]
	return *s.DeepCopy(), ok
}

// Set stores status for pod. A terminal phase already stored is kept.
func (m *Manager) Set(pod *v1.Pod, s v1.PodStatus) {
	m.mu.Lock()
	old, had := m.statuses[pod.UID]
	if had && (old.Phase == v1.PodSucceeded || old.Phase == v1.PodFailed) && s.Phase != old.Phase {
		s.Phase, s.Reason, s.Message = old.Phase, old.Reason, old.Message
	}
	changed := !had || !equalStatus(old, s)
	m.statuses[pod.UID] = *s.DeepCopy()
	dirty := m.dirty
	m.mu.Unlock()
	if changed && dirty != nil {
		select {
		case dirty <- pod.UID:
		default: // the periodic resync catches up
		}
	}
	if changed && m.notify != nil {
		m.notify(pod.UID)
	}
}

// Kick asks the API sync to look at uid again (for example when the API
// marked it for deletion).
func (m *Manager) Kick(uid types.UID) {
	m.mu.RLock()
	dirty := m.dirty
	m.mu.RUnlock()
	if dirty != nil {
		select {
		case dirty <- uid:
		default:
		}
	}
}

// Delete forgets a pod.
func (m *Manager) Delete(uid types.UID) {
	m.mu.Lock()
	delete(m.statuses, uid)
	m.mu.Unlock()
}

func equalStatus(a, b v1.PodStatus) bool {
	return a.String() == b.String()
}
