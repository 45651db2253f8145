package prober

import (
	"context"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

// Result is the outcome of a probe, or the aggregated state of a worker.
type Result int

const (
	// Unknown means no conclusive result yet.
	Unknown Result = iota
	// Success means the probe passed.
	Success
	// Failure means the probe failed.
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	default:
		return "unknown"
	}
}

// ProbeType identifies which of a container's probes a result belongs to.
type ProbeType int

const (
	// Liveness probes restart the container on failure.
	Liveness ProbeType = iota
	// Readiness probes gate the container's Ready condition.
	Readiness
	// Startup probes hold back liveness and readiness until they succeed.
	Startup
)

func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	default:
		return "Unknown"
	}
}

// Prior is what was last reported for a container instance before the
// prober saw it: after a kubelet restart, the pod's status in the API
// server for a container that kept running. Only reports about the same
// instance (container ID) count.
type Prior struct {
	// Ready: the instance was reported ready.
	Ready bool
	// Started: the instance was reported started (its startup probe, if
	// any, had passed).
	Started bool
}

// Update is sent on Manager.Updates whenever a worker's result changes.
type Update struct {
	PodUID        types.UID
	ContainerName string
	ContainerID   string
	Type          ProbeType
	Result        Result
}

// Runtime is the slice of the CRI runtime service the exec handler needs.
type Runtime interface {
	ExecSync(ctx context.Context, in *runtimeapi.ExecSyncRequest, opts ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error)
}

// Recorder emits Kubernetes events (Unhealthy, ProbeWarning).
type Recorder interface {
	Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Config holds the dependencies of a Manager.
type Config struct {
	// Runtime executes exec probes; required only if pods use exec probes.
	Runtime Runtime
	// Clock drives probe scheduling; defaults to the real clock.
	Clock clock.WithTicker
	// Recorder receives probe events; optional.
	Recorder Recorder
	// Metrics receives prober_probe_total and prober_probe_duration_seconds;
	// nil means a private set nobody serves.
	Metrics *metrics.Metrics
}
