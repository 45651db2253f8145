package sources

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// Operation says what a PodUpdate asks the consumer to do with its pods.
type Operation int

const (
	// ADD carries pods the source has not published before.
	ADD Operation = iota
	// UPDATE carries pods whose spec, labels or annotations changed.
	UPDATE
	// DELETE carries pods that gained (or changed while carrying) a
	// deletion timestamp: the consumer should stop them gracefully.
	DELETE
	// REMOVE carries pods the source no longer publishes.
	REMOVE
	// RECONCILE carries pods whose status alone changed.
	RECONCILE
)

// String returns the upper-case name of the operation.
func (o Operation) String() string {
	switch o {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	default:
		return fmt.Sprintf("Operation(%d)", int(o))
	}
}

// Source names, as used for mux channels and the config.source annotation.
const (
	FileSource      = "file"
	HTTPSource      = "http"
	ApiserverSource = podutil.ApiserverSource
)

// PodUpdate is one incremental change from one source.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     Operation
	Source string
}
