package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/node/nodestatus"
)

// ReasonSystemOOM is upstream's node event for a system-wide OOM kill.
const ReasonSystemOOM = "SystemOOM"

// OOMKill is one kernel OOM kill, as the kernel logs it.
type OOMKill struct {
	// Constraint is CONSTRAINT_NONE (the whole machine ran out),
	// CONSTRAINT_MEMCG (a cgroup hit its limit), ...
	Constraint string
	// OOMCgroup is the memory cgroup that ran out ("/" for the machine);
	// TaskCgroup the victim's own cgroup.
	OOMCgroup, TaskCgroup string
	Process               string
	PID                   int
}

// System reports whether the machine as a whole ran out of memory (the
// kernel's OOM cgroup is the root), which upstream turns into SystemOOM.
func (k OOMKill) System() bool { return k.OOMCgroup == "/" }

var oomKillLine = regexp.MustCompile(`oom-kill:constraint=([^,]*),.*?oom_memcg=([^,]*),task_memcg=([^,]*),task=([^,]*),pid=(\d+)`)

// ParseOOMKill reads a kernel log message; ok is false unless it is the
// "oom-kill:" summary line the kernel prints for each OOM kill.
func ParseOOMKill(msg string) (OOMKill, bool) {
	m := oomKillLine.FindStringSubmatch(msg)
	if m == nil {
		return OOMKill{}, false
	}
	pid, _ := strconv.Atoi(m[5])
	return OOMKill{Constraint: m[1], OOMCgroup: m[2], TaskCgroup: m[3], Process: m[4], PID: pid}, true
}

// KmsgMessage returns the message of one /dev/kmsg record
// ("<prio>,<seq>,<usec>,<flags>[,...];<message>"), without continuation lines.
func KmsgMessage(record string) (string, bool) {
	_, msg, ok := strings.Cut(record, ";")
	if !ok {
		return "", false
	}
	msg, _, _ = strings.Cut(msg, "\n")
	return msg, true
}

// SystemOOMMessage is the SystemOOM event's message, as upstream words it.
func SystemOOMMessage(k OOMKill) string {
	msg := "System OOM encountered"
	if k.Process != "" && k.PID != 0 {
		msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, k.Process, k.PID)
	}
	return msg
}

// OOMWatcher turns the kernel's OOM kills into node events, as upstream's
// OOM watcher does: a Warning SystemOOM on the Node when the whole machine
// ran out of memory. Kills inside a cgroup's limit (a container over its
// memory limit) are logged; the runtime reports those on the container as
// OOMKilled.
type OOMWatcher struct {
	// NodeName names the Node. Required.
	NodeName string
	// Recorder receives the events. Required.
	Recorder events.Recorder
	// Path is the kernel log device; "" means /dev/kmsg.
	Path string
}

// ErrKmsgUnavailable is returned when the kernel log cannot be read.
var ErrKmsgUnavailable = errors.New("kernel log unavailable")

// Start opens the kernel log at its end (earlier kills are not reported
// again after a restart) and watches it until ctx ends.
func (w *OOMWatcher) Start(ctx context.Context) error {
	path := w.Path
	if path == "" {
		path = "/dev/kmsg"
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKmsgUnavailable, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		klog.V(2).InfoS("Cannot seek to the end of the kernel log; reading it whole", "path", path, "err", err)
	}
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go w.run(ctx, f)
	return nil
}

func (w *OOMWatcher) run(ctx context.Context, r io.Reader) {
	// /dev/kmsg returns one whole record per read.
	buf := make([]byte, 8192)
	for {
		n, err := r.Read(buf)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return
			}
			if errors.Is(err, syscall.EPIPE) {
				continue // records were overwritten before we read them
			}
			klog.ErrorS(err, "Stopped reading the kernel log for OOM kills")
			return
		}
		w.Handle(string(buf[:n]))
	}
}

// Handle reacts to one kernel log record.
func (w *OOMWatcher) Handle(record string) {
	msg, ok := KmsgMessage(record)
	if !ok {
		return
	}
	k, ok := ParseOOMKill(msg)
	if !ok {
		return
	}
	if !k.System() {
		klog.V(2).InfoS("OOM kill in a memory cgroup", "cgroup", k.OOMCgroup, "taskCgroup", k.TaskCgroup, "process", k.Process, "pid", k.PID)
		return
	}
	klog.V(1).InfoS("Got system OOM event", "process", k.Process, "pid", k.PID, "constraint", k.Constraint)
	w.Recorder.Eventf(nodestatus.NodeRef(w.NodeName), v1.EventTypeWarning, ReasonSystemOOM, "%s", SystemOOMMessage(k))
}
