package nodestatus

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Latest holds the Node the rest of the kubelet reads (admission, mirror
// pods' owner, resourceFieldRef defaults, the lease): the one computed
// locally at start-up until the Controller registers or reads the Node,
// then the last one it saw on or sent to the API server. Safe for
// concurrent use.
type Latest struct {
	mu   sync.RWMutex
	node *v1.Node
}

// NewLatest returns a Latest holding initial (see LocalNode).
func NewLatest(initial *v1.Node) *Latest { return &Latest{node: initial.DeepCopy()} }

// Node returns the Node; callers must not modify it.
func (l *Latest) Node() *v1.Node {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.node
}

// UID is the Node's UID: "" until it is registered.
func (l *Latest) UID() types.UID { return l.Node().UID }

// Allocatable is the Node's status.allocatable.
func (l *Latest) Allocatable() v1.ResourceList { return l.Node().Status.Allocatable }

func (l *Latest) set(n *v1.Node) {
	n = n.DeepCopy()
	l.mu.Lock()
	l.node = n
	l.mu.Unlock()
}

// LocalNode is the Node as the kubelet computes it from in, for admission
// before (or without) an API server. Pure.
func LocalNode(in Inputs, now time.Time) *v1.Node {
	node := NewNode(in)
	SetStatus(node, in, now)
	return node
}
