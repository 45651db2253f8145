package sources

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
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
	ApiserverSource = "api"
)

// Annotations the kubelet maintains on the pods it learns about.
const (
	// ConfigSourceAnnotationKey records which source a pod came from.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigHashAnnotationKey records the UID generated for a static pod.
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
	// ConfigFirstSeenAnnotationKey records when the kubelet first saw a pod
	// (RFC3339Nano). It is kept across updates of the same UID.
	ConfigFirstSeenAnnotationKey = "kubernetes.io/config.seen"
	// ConfigMirrorAnnotationKey marks a mirror pod of a static pod.
	ConfigMirrorAnnotationKey = "kubernetes.io/config.mirror"
)

// PodUpdate is one incremental change from one source.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     Operation
	Source string
}
