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

// TestKubeletDoesNotLinkOpenAPI keeps strategicpatch (replaced by smp) and
// client-go's event recorder (replaced by internal/events) out, and with
// them gnostic-models, kube-openapi's schema packages, go-openapi and the
// YAML v3 libraries: about 2.9 MB of the stripped binary. kube-openapi's
// tiny pkg/util stays (apimachinery's runtime imports it), and so does
// record/util (event names and types, one home for them).
func TestKubeletDoesNotLinkOpenAPI(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not in PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/seed-kubelet/kubelet/cmd/kubelet").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "k8s.io/kube-openapi/pkg/util", "k8s.io/client-go/tools/record/util":
			continue // tiny: apimachinery's runtime; event names and types
		}
		for _, banned := range []string{"k8s.io/apimachinery/pkg/util/strategicpatch", "k8s.io/client-go/tools/record", "github.com/google/gnostic-models", "k8s.io/kube-openapi", "github.com/go-openapi", "gopkg.in/yaml.v3", "go.yaml.in/yaml/v3"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("cmd/kubelet links %s", pkg)
			}
		}
	}
}
