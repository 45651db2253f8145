package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

const gate v1.PodConditionType = "example.com/lb-ready"

func gated(conds ...v1.PodCondition) *v1.Pod {
	p := mkPod(v1.RestartPolicyAlways, "c")
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}, {ConditionType: "example.com/dns"}}
	p.Status.Conditions = conds
	return p
}

func c(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s}
}

func TestReadinessGates(t *testing.T) {
	cases := []struct {
		name    string
		conds   []v1.PodCondition
		wantOK  bool
		wantMsg string
	}{
		{name: "no conditions", wantMsg: `corresponding condition of pod readiness gate "example.com/lb-ready" does not exist., corresponding condition of pod readiness gate "example.com/dns" does not exist.`},
		{name: "one False one missing", conds: []v1.PodCondition{c(gate, v1.ConditionFalse)},
			wantMsg: `the status of pod readiness gate "example.com/lb-ready" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.`},
		{name: "all True", conds: []v1.PodCondition{c(gate, v1.ConditionTrue), c("example.com/dns", v1.ConditionTrue)}, wantOK: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := ReadinessGates(gated(), tc.conds)
			if ok != tc.wantOK || msg != tc.wantMsg || (!ok && reason != "ReadinessGatesNotReady") {
				t.Fatalf("got %v %q %q, want %v %q", ok, reason, msg, tc.wantOK, tc.wantMsg)
			}
		})
	}
}

// The gates are read from the pod's API status (set by controllers), not
// from what the kubelet reported last; foreign conditions are carried over
// from the API status too.
func TestGenerateReadsGatesFromAPIStatus(t *testing.T) {
	bothTrue := []v1.PodCondition{c(gate, v1.ConditionTrue), c("example.com/dns", v1.ConditionTrue)}
	cases := []struct {
		name      string
		apiConds  []v1.PodCondition
		oldConds  []v1.PodCondition
		wantReady v1.ConditionStatus
		wantConds int // foreign conditions in the result
	}{
		{name: "gates True in the API", apiConds: bothTrue, wantReady: v1.ConditionTrue, wantConds: 2},
		{name: "gates True only in the kubelet's last status", oldConds: bothTrue, wantReady: v1.ConditionFalse, wantConds: 0},
		{name: "one gate False", apiConds: []v1.PodCondition{c(gate, v1.ConditionTrue), c("example.com/dns", v1.ConditionFalse)}, wantReady: v1.ConditionFalse, wantConds: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := gated(tc.apiConds...)
			s := Generate(Input{Pod: p, Runtime: rt(running("c")), Old: v1.PodStatus{Conditions: tc.oldConds}, Now: now})
			if got := cond(s, v1.PodReady).Status; got != tc.wantReady {
				t.Fatalf("Ready %s, want %s (%+v)", got, tc.wantReady, cond(s, v1.PodReady))
			}
			if got := cond(s, v1.ContainersReady).Status; got != v1.ConditionTrue {
				t.Fatalf("ContainersReady %s", got)
			}
			foreign := 0
			for _, cd := range s.Conditions {
				if !KubeletCondition(cd.Type) {
					foreign++
				}
			}
			if foreign != tc.wantConds {
				t.Fatalf("%d foreign conditions, want %d: %+v", foreign, tc.wantConds, s.Conditions)
			}
		})
	}
}

func TestNeedsReadinessSync(t *testing.T) {
	ready := func(s v1.ConditionStatus, msg string) v1.PodCondition {
		return v1.PodCondition{Type: v1.PodReady, Status: s, Message: msg}
	}
	missingBoth := `corresponding condition of pod readiness gate "example.com/lb-ready" does not exist., corresponding condition of pod readiness gate "example.com/dns" does not exist.`
	cases := []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{name: "no gates", pod: mkPod(v1.RestartPolicyAlways, "c")},
		{name: "no Ready condition yet", pod: gated(c(gate, v1.ConditionTrue))},
		{name: "containers not ready", pod: gated(c(v1.ContainersReady, v1.ConditionFalse), ready(v1.ConditionFalse, ""), c(gate, v1.ConditionTrue), c("example.com/dns", v1.ConditionTrue))},
		{name: "Ready False and gates still missing", pod: gated(c(v1.ContainersReady, v1.ConditionTrue), ready(v1.ConditionFalse, missingBoth))},
		{name: "gates patched True", pod: gated(c(v1.ContainersReady, v1.ConditionTrue), ready(v1.ConditionFalse, missingBoth), c(gate, v1.ConditionTrue), c("example.com/dns", v1.ConditionTrue)), want: true},
		{name: "one gate patched: message changes", pod: gated(c(v1.ContainersReady, v1.ConditionTrue), ready(v1.ConditionFalse, missingBoth), c(gate, v1.ConditionTrue)), want: true},
		{name: "gate turned False while Ready", pod: gated(c(v1.ContainersReady, v1.ConditionTrue), ready(v1.ConditionTrue, ""), c(gate, v1.ConditionFalse), c("example.com/dns", v1.ConditionTrue)), want: true},
		{name: "Ready True and gates True", pod: gated(c(v1.ContainersReady, v1.ConditionTrue), ready(v1.ConditionTrue, ""), c(gate, v1.ConditionTrue), c("example.com/dns", v1.ConditionTrue))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsReadinessSync(tc.pod); got != tc.want {
				t.Fatalf("NeedsReadinessSync = %v, want %v", got, tc.want)
			}
		})
	}
}
