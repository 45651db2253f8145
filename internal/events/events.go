package events

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// Upstream's event reasons, so dashboards and alerts keep working.
const (
	Created             = "Created"
	Started             = "Started"
	Killing             = "Killing"
	Failed              = "Failed"
	BackOff             = "BackOff"
	Pulling             = "Pulling"
	Pulled              = "Pulled"
	FailedCreatePodSbx  = "FailedCreatePodSandBox"
	SandboxChanged      = "SandboxChanged"
	ExceededGracePeriod = "ExceededGracePeriod"
	MissingClusterDNS   = "MissingClusterDNS"
	DNSConfigForming    = "DNSConfigForming"
	ErrImageNeverPull   = "ErrImageNeverPull"
	InspectFailed       = "InspectFailed"
	Unsupported         = "UnsupportedField"
	FailedPostStartHook = "FailedPostStartHook"
	FailedPreStopHook   = "FailedPreStopHook"
	DeadlineExceeded    = "DeadlineExceeded"
	StartingKubelet     = "Starting"
	// In-place pod resize (pods/resize), as upstream's.
	ResizeDeferred   = "ResizeDeferred"
	ResizeInfeasible = "ResizeInfeasible"
	ResizeCompleted  = "ResizeCompleted"
	ResizeStarted    = "ResizeStarted"
	ResizeError      = "ResizeError"
)

// Recorder emits an event about an object. client-go's
// record.EventRecorder satisfies it.
type Recorder interface {
	Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// LogRecorder writes events to the log, for standalone mode.
type LogRecorder struct{}

var _ Recorder = LogRecorder{}

// Eventf logs the event at level 2 (warnings always).
func (LogRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	ref := klog.KRef("", "")
	kind := ""
	if acc, err := meta.Accessor(obj); err == nil {
		ref = klog.KRef(acc.GetNamespace(), acc.GetName())
	}
	if _, ok := obj.(*v1.Pod); ok {
		kind = "Pod"
	}
	msg := fmt.Sprintf(messageFmt, args...)
	if eventtype == v1.EventTypeWarning {
		klog.InfoS("Event", "object", ref, "kind", kind, "type", eventtype, "reason", reason, "message", msg)
		return
	}
	klog.V(2).InfoS("Event", "object", ref, "kind", kind, "type", eventtype, "reason", reason, "message", msg)
}

// Reasons of the pod spec's volume and security checks.
const (
	// FailedMount: a volume could not be set up; the pod waits for it.
	FailedMount = "FailedMount"
)
