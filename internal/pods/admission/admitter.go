package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
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
}

// Admitter runs upstream's admit handlers in their order: the eviction
// manager's pressure check, the sysctl allowlist, then the predicates
// against the current Node.
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
	if r := a.sysctls.Admit(pod); !r.Admit {
		return r.Admit, r.Reason, r.Message
	}
	r := Admit(pod, a.cfg.Node.Node(), active)
	return r.Admit, r.Reason, r.Message
}
