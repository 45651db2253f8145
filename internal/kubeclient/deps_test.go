package kubeclient

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKubeletDoesNotLinkTheClientset keeps the binary small: the generated
// clientset, its apply configurations and discovery add about 20 MiB to the
// stripped kubelet. Tests may use them; the kubelet command may not.
func TestKubeletDoesNotLinkTheClientset(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not in PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/seed-kubelet/kubelet/cmd/kubelet").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/applyconfigurations", "k8s.io/client-go/discovery", "k8s.io/client-go/informers"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("cmd/kubelet links %s", pkg)
			}
		}
	}
}
