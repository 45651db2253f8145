package statusmanager

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// dirtyBuffer is how many changed UIDs wait for the API sync before more
// are dropped (the periodic resync then catches up), as upstream's
// podStatusChannel.
const dirtyBuffer = 1000

// Stored is a pod's status as the manager keeps it.
type Stored struct {
	Status v1.PodStatus
	// Basis is the UID of the API object whose status this one was built
	// on (the pod, or a static pod's mirror pod; empty when none was
	// known). It is only ever written to that object.
	Basis types.UID
}

// Manager stores pod statuses. Safe for concurrent use.
type Manager struct {
	mu       sync.RWMutex
	statuses map[types.UID]Stored
	notify   func(uid types.UID)
	// dirty receives the UIDs whose status changed, for the API sync. It
	// exists from the start: a status set before the sync runs (right
	// after a restart) must not wait for the periodic resync.
	dirty chan types.UID
}

// NewManager returns an empty Manager. onChange, when not nil, is called
// (outside the lock) after a pod's status changed.
func NewManager(onChange func(uid types.UID)) *Manager {
	return &Manager{statuses: map[types.UID]Stored{}, notify: onChange, dirty: make(chan types.UID, dirtyBuffer)}
}

// Get returns a copy of the pod's status.
func (m *Manager) Get(uid types.UID) (v1.PodStatus, bool) {
	st, ok := m.Lookup(uid)
	return st.Status, ok
}

// Lookup returns a copy of the pod's status with its basis.
func (m *Manager) Lookup(uid types.UID) (Stored, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.statuses[uid]
	return Stored{Status: *s.Status.DeepCopy(), Basis: s.Basis}, ok
}

// Set stores status for pod, keeping the basis already stored (the pod's
// own UID for a pod not stored yet). A terminal phase already stored is kept.
func (m *Manager) Set(pod *v1.Pod, s v1.PodStatus) {
	m.set(pod, s, nil)
}

// SetBuiltOn stores status for pod, built on the API object basis (see
// Stored). A terminal phase already stored is kept.
func (m *Manager) SetBuiltOn(pod *v1.Pod, s v1.PodStatus, basis types.UID) {
	m.set(pod, s, &basis)
}

func (m *Manager) set(pod *v1.Pod, s v1.PodStatus, basis *types.UID) {
	m.mu.Lock()
	old, had := m.statuses[pod.UID]
	if had && (old.Status.Phase == v1.PodSucceeded || old.Status.Phase == v1.PodFailed) && s.Phase != old.Status.Phase {
		s.Phase, s.Reason, s.Message = old.Status.Phase, old.Status.Reason, old.Status.Message
	}
	next := Stored{Status: *s.DeepCopy(), Basis: pod.UID}
	switch {
	case basis != nil:
		next.Basis = *basis
	case had:
		next.Basis = old.Basis
	}
	changed := !had || old.Basis != next.Basis || !equalStatus(old.Status, s)
	m.statuses[pod.UID] = next
	m.mu.Unlock()
	if changed {
		m.Kick(pod.UID)
		if m.notify != nil {
			m.notify(pod.UID)
		}
	}
}

// Kick asks the API sync to look at uid again (for example when the API
// marked it for deletion).
func (m *Manager) Kick(uid types.UID) {
	select {
	case m.dirty <- uid:
	default: // the periodic resync catches up
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
