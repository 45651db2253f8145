package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
)

// TestDeclaredFeatures: a pod needing an undeclared node feature is
// refused with upstream's reason and message (upstream's
// declaredFeaturesAdmitHandler over the shared library's inference).
func TestDeclaredFeatures(t *testing.T) {
	ours := []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}
	upstream := []string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers",
		"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"}
	restartAll := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	tests := []struct {
		name     string
		declared []string
		mutate   func(*v1.Pod)
		wantMsg  string // "" admitted
	}{
		{name: "a plain pod", declared: ours, mutate: func(*v1.Pod) {}},
		{name: "a plain pod, nothing declared", declared: []string{}, mutate: func(*v1.Pod) {}},
		{name: "a Restart rule needs nothing", declared: ours, mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		}},
		{name: "RestartAllContainers in a container", declared: ours, mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = restartAll
		}, wantMsg: "Pod requires node features that are not available: RestartAllContainersOnContainerExits"},
		{name: "RestartAllContainers in an init container", declared: ours, mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever), RestartPolicyRules: restartAll}}
		}, wantMsg: "Pod requires node features that are not available: RestartAllContainersOnContainerExits"},
		{name: "RestartAllContainers on a node declaring it", declared: upstream, mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = restartAll
		}},
		{name: "user namespace with the host network", declared: ours, mutate: func(p *v1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostUsers = true, ptr.To(false)
		}, wantMsg: "Pod requires node features that are not available: UserNamespacesHostNetworkSupport"},
		{name: "both", declared: ours, mutate: func(p *v1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostUsers = true, ptr.To(false)
			p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = restartAll
		}, wantMsg: "Pod requires node features that are not available: RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDeclaredFeatures(tc.declared, version.MustParse("1.36.3"))
			if err != nil {
				t.Fatal(err)
			}
			pod := testPod("p", nil, tc.mutate)
			ok, reason, msg := d.Admit(pod)
			if tc.wantMsg == "" {
				if !ok {
					t.Errorf("refused: %s %s", reason, msg)
				}
				return
			}
			if ok || reason != "PodFeatureUnsupported" || msg != tc.wantMsg {
				t.Errorf("Admit = %v %q %q, want PodFeatureUnsupported %q", ok, reason, msg, tc.wantMsg)
			}
		})
	}
	if _, err := NewDeclaredFeatures([]string{"NoSuchFeature"}, version.MustParse("1.36.3")); err == nil {
		t.Error("an unknown declared feature was accepted")
	}
}
