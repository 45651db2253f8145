package admission

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/events"
	"github.com/seed-kubelet/kubelet/internal/pods/podspec"
)

// Pressure is the eviction manager's admission check of the node's
// pressure conditions.
type Pressure interface {
	Admit(pod *v1.Pod) (ok bool, reason, message string)
}

// NodeSource gives the Node admission checks against (nodestatus.Latest).
type NodeSource interface {
	Node() *v1.Node
}

// AdmitterConfig configures an Admitter.
type AdmitterConfig struct {
	// Node is the Node as last known (required).
	Node NodeSource
	// Pressure may be nil: no pressure check.
	Pressure Pressure
	// KernelRelease picks the safe sysctls this kernel namespaces;
	// AllowedUnsafeSysctls (allowedUnsafeSysctls) are allowed beside them.
	KernelRelease        string
	AllowedUnsafeSysctls []string
	// Recorder receives the UnsupportedField warning of an admitted pod
	// that sets fields the kubelet does not act on; nil sends none.
	Recorder events.Recorder
	// Shutdown rejects pods while the node shuts down (the graceful node
	// shutdown manager's handler, last as upstream); may be nil.
	Shutdown PodAdmitter
	// Features rejects pods needing node features the node does not
	// declare (DeclaredFeatures; right after the pressure check, as
	// upstream); nil when NodeDeclaredFeatures is off.
	Features PodAdmitter
}

// PodAdmitter is one more admit handler.
type PodAdmitter interface {
	Admit(pod *v1.Pod) (ok bool, reason, message string)
}

// Admitter runs upstream's admit handlers in their order: the eviction
// manager's pressure check, the declared features check, the sysctl
// allowlist, then (ours) the pod fields this kubelet rejects
// (podspec.Rejection), then the predicates against the current Node, then
// the node shutdown manager's. An admitted pod that sets fields the
// kubelet does not act on gets one UnsupportedField warning naming them
// (podspec.Unsupported).
type Admitter struct {
	cfg     AdmitterConfig
	sysctls *SysctlAllowlist
}

// NewAdmitter returns an Admitter; a bad allowedUnsafeSysctls pattern is
// an error (the kubelet stops, as upstream).
func NewAdmitter(cfg AdmitterConfig) (*Admitter, error) {
	w, err := NewSysctlAllowlist(append(SafeSysctls(cfg.KernelRelease), cfg.AllowedUnsafeSysctls...))
	if err != nil {
		return nil, fmt.Errorf("allowedUnsafeSysctls: %w", err)
	}
	return &Admitter{cfg: cfg, sysctls: w}, nil
}

// Admit decides whether pod may run beside the active pods.
func (a *Admitter) Admit(pod *v1.Pod, active []*v1.Pod) (ok bool, reason, message string) {
	if a.cfg.Pressure != nil {
		if ok, reason, msg := a.cfg.Pressure.Admit(pod); !ok {
			return false, reason, msg
		}
	}
	if a.cfg.Features != nil {
		if ok, reason, msg := a.cfg.Features.Admit(pod); !ok {
			return false, reason, msg
		}
	}
	if r := a.sysctls.Admit(pod); !r.Admit {
		return r.Admit, r.Reason, r.Message
	}
	if reason, msg, rejected := podspec.Rejection(pod); rejected {
		return false, reason, msg
	}
	r := Admit(pod, a.cfg.Node.Node(), active)
	if r.Admit && a.cfg.Shutdown != nil {
		if ok, reason, msg := a.cfg.Shutdown.Admit(pod); !ok {
			return false, reason, msg
		}
	}
	if r.Admit && a.cfg.Recorder != nil {
		if found := podspec.Unsupported(pod); len(found) > 0 {
			names := make([]string, len(found))
			for i, f := range found {
				names[i] = f.String()
			}
			a.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, events.Unsupported,
				"This kubelet does not implement %s", strings.Join(names, "; "))
		}
	}
	return r.Admit, r.Reason, r.Message
}
