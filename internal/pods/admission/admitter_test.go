package admission

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/pods/podspec"
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
	restartAll := testPod("restartall", rl("cpu", "64"), unsafe, func(p *v1.Pod) {
		p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers}}
	})
	features, err := NewDeclaredFeatures([]string{"InPlacePodLevelResourcesVerticalScaling"}, version.MustParse("1.36.3"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		pressure   Pressure
		allowed    []string
		pod        *v1.Pod
		wantOK     bool
		wantReason string
	}{
		{name: "pressure first", pressure: pressure{reject: true}, pod: restartAll, wantReason: "Evicted"},
		{name: "then the declared features", pressure: pressure{}, pod: restartAll, wantReason: "PodFeatureUnsupported"},
		{name: "then sysctls", pressure: pressure{}, pod: huge, wantReason: "SysctlForbidden"},
		{name: "then the predicates", allowed: []string{"kernel.msg*"}, pod: huge, wantReason: "OutOfcpu"},
		{name: "admitted", allowed: []string{"kernel.msgmax"}, pod: testPod("small", rl("cpu", "100m"), unsafe), wantOK: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAdmitter(AdmitterConfig{Node: fixedNode{testNode()}, Pressure: c.pressure, KernelRelease: "6.1.0", AllowedUnsafeSysctls: c.allowed,
				Features: features})
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

type recordedEvents []string

func (r *recordedEvents) Eventf(_ runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	*r = append(*r, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
}

// Pod fields this kubelet does not act on: a rejected one fails the pod at
// admission with its reason; warned ones let it in with one UnsupportedField
// warning naming each.
func TestAdmitterPodFields(t *testing.T) {
	var rec recordedEvents
	a, err := NewAdmitter(AdmitterConfig{Node: fixedNode{testNode()}, KernelRelease: "6.1.0", Recorder: &rec})
	if err != nil {
		t.Fatal(err)
	}
	// No field is Rejected today; an override stands in for one.
	podspec.Overrides["spec.hostPID"] = podspec.Field{Class: podspec.Rejected, Reason: "TestRejected", Note: "not here"}
	defer delete(podspec.Overrides, "spec.hostPID")
	hostPID := testPod("host-pid", rl("cpu", "100m"), func(p *v1.Pod) { p.Spec.HostPID = true })
	ok, reason, msg := a.Admit(hostPID, nil)
	if ok || reason != "TestRejected" || !strings.Contains(msg, "spec.hostPID") {
		t.Errorf("a rejected field: Admit = %v %q %q, want a TestRejected rejection naming the field", ok, reason, msg)
	}
	claims := testPod("claims", rl("cpu", "100m"), func(p *v1.Pod) {
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("c")}}
	})
	if ok, reason, _ := a.Admit(claims, nil); !ok {
		t.Fatalf("resourceClaims: rejected with %q, want admitted with a warning", reason)
	}
	want := []string{"Warning UnsupportedField This kubelet does not implement spec.resourceClaims (ignored: no dynamic resource allocation: claimed devices are not prepared nor handed to containers)"}
	if !slices.Equal(rec, want) {
		t.Errorf("events %q, want %q", rec, want)
	}
	rec = nil
	if ok, _, _ := a.Admit(testPod("plain", rl("cpu", "100m")), nil); !ok || len(rec) != 0 {
		t.Errorf("plain pod: admitted %v, events %q; want admitted without events", ok, rec)
	}
}
