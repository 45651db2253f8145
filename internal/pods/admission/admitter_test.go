package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

type fixedNode struct{ n *v1.Node }

func (f fixedNode) Node() *v1.Node { return f.n }

type pressure struct{ reject bool }

func (p pressure) Admit(*v1.Pod) (bool, string, string) {
	if p.reject {
		return false, "Evicted", "The node had condition: [MemoryPressure]. "
	}
	return true, "", ""
}

// The handlers run in upstream's order; the first refusal wins.
func TestAdmitterOrder(t *testing.T) {
	unsafe := func(p *v1.Pod) {
		p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	}
	huge := testPod("huge", rl("cpu", "64"), unsafe)
	cases := []struct {
		name       string
		pressure   Pressure
		allowed    []string
		pod        *v1.Pod
		wantOK     bool
		wantReason string
	}{
		{name: "pressure first", pressure: pressure{reject: true}, pod: huge, wantReason: "Evicted"},
		{name: "then sysctls", pressure: pressure{}, pod: huge, wantReason: "SysctlForbidden"},
		{name: "then the predicates", allowed: []string{"kernel.msg*"}, pod: huge, wantReason: "OutOfcpu"},
		{name: "admitted", allowed: []string{"kernel.msgmax"}, pod: testPod("small", rl("cpu", "100m"), unsafe), wantOK: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAdmitter(AdmitterConfig{Node: fixedNode{testNode()}, Pressure: c.pressure, KernelRelease: "6.1.0", AllowedUnsafeSysctls: c.allowed})
			if err != nil {
				t.Fatal(err)
			}
			ok, reason, _ := a.Admit(c.pod, nil)
			if ok != c.wantOK || reason != c.wantReason {
				t.Errorf("Admit = %v %q, want %v %q", ok, reason, c.wantOK, c.wantReason)
			}
		})
	}
	if _, err := NewAdmitter(AdmitterConfig{Node: fixedNode{testNode()}, AllowedUnsafeSysctls: []string{"kernel.*.x"}}); err == nil {
		t.Error("a bad allowedUnsafeSysctls pattern was accepted")
	}
}
