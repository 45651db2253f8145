package events

import (
	"encoding/json"
	"fmt"
	"strings"

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
	// PossibleMemoryBackedVolumesOnDisk: swap is on and tmpfs cannot refuse it.
	PossibleMemoryBackedVolumesOnDisk = "PossibleMemoryBackedVolumesOnDisk"
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

// AnnotatedRecorder is a Recorder that can also put annotations on the
// event (upstream's AnnotatedEventf; the eviction manager's
// starved_resource). Both our recorders are one.
type AnnotatedRecorder interface {
	Recorder
	AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any)
}

var (
	_ AnnotatedRecorder = LogRecorder{}
	_ AnnotatedRecorder = (*Broadcaster)(nil)
)

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

// ProgressAnnotation carries a running operation's progress on an event
// (e.g. "12.0 MiB of 40.0 MiB (30%), 1.2 MiB/s" on Pulling). The event is
// otherwise identical to the one that announced the operation, so client-go's
// correlator counts it as one more occurrence of that event: the API holds one
// event whose count and lastTimestamp grow. The sink writes the note after its
// message (WithProgressNote, ProgressPatch) and never stores the annotation.
const ProgressAnnotation = "kubelet.seed-kubelet.io/progress"

// Progressf records one more occurrence of the event (eventtype, reason,
// message) on obj with note as its progress.
func Progressf(r AnnotatedRecorder, obj runtime.Object, eventtype, reason, note, messageFmt string, args ...any) {
	r.AnnotatedEventf(obj, map[string]string{ProgressAnnotation: note}, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf logs the event as Eventf does, with a progress note
// (ProgressAnnotation) after the message.
func (l LogRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	msg := fmt.Sprintf(messageFmt, args...)
	if note := annotations[ProgressAnnotation]; note != "" {
		msg = progressMessage(msg, note)
	}
	l.Eventf(obj, eventtype, reason, "%s", msg)
}

func progressMessage(message, note string) string { return message + ": " + note }

// WithProgressNote returns the event to write for e: e itself, or, when it
// carries a progress note, a copy with the note after its message and
// without the annotation.
func WithProgressNote(e *v1.Event) *v1.Event {
	note, ok := e.Annotations[ProgressAnnotation]
	if !ok {
		return e
	}
	out := e.DeepCopy()
	delete(out.Annotations, ProgressAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	out.Message = progressMessage(e.Message, note)
	return out
}

// ProgressPatch returns the patch to send for the correlator's patch of e
// (its count, lastTimestamp and message): the same patch, with the message
// carrying e's progress note when it has one (and unchanged should the patch
// not be the JSON object the correlator makes).
func ProgressPatch(e *v1.Event, patch []byte) []byte {
	if _, ok := e.Annotations[ProgressAnnotation]; !ok {
		return patch
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return patch
	}
	msg, _ := json.Marshal(WithProgressNote(e).Message)
	fields["message"] = msg
	out, err := json.Marshal(fields)
	if err != nil {
		return patch
	}
	return out
}

// SpamKey is client-go's spam filter key (source, object and type: each key
// may send 25 events at once, then one every 5 minutes), with progress
// updates on a key of their own: a long pull's updates must not use up the
// budget of the pod's other events (Pulled, Created, Started).
func SpamKey(e *v1.Event) string {
	key := strings.Join([]string{
		e.Source.Component, e.Source.Host,
		e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name,
		string(e.InvolvedObject.UID), e.InvolvedObject.APIVersion, e.Type,
	}, "")
	if _, ok := e.Annotations[ProgressAnnotation]; ok {
		key += "\x00progress"
	}
	return key
}
