package sources

import (
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/seed-kubelet/kubelet/internal/pods/podspec"
)

// FuzzParseStaticPods feeds manifest bytes (seeds: examples/pods and the
// decoder's test documents, testdata/fuzz) through decoding, the static
// pod identity, defaulting and validation: it must never panic, and every
// pod it accepts must be valid, named for the node and parsed the same way
// twice.
func FuzzParseStaticPods(f *testing.F) {
	o := staticOrigin{NodeName: "node-1", Source: FileSource, Location: "/etc/kubernetes/manifests/m.yaml", Now: time.Unix(1700000000, 0)}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := parseStaticPods(data, o)
		if err != nil {
			return
		}
		again, err := parseStaticPods(data, o)
		if err != nil {
			t.Fatalf("parsed once, failed the second time: %v", err)
		}
		for i, p := range pods {
			if !strings.HasSuffix(p.Name, "-node-1") || p.UID == "" || p.Spec.NodeName != "node-1" {
				t.Fatalf("pod %d: name %q UID %q node %q", i, p.Name, p.UID, p.Spec.NodeName)
			}
			if errs := podspec.Validate(p); len(errs) > 0 {
				t.Fatalf("accepted an invalid pod: %v", errs.ToAggregate())
			}
			if !apiequality.Semantic.DeepEqual(p, again[i]) {
				t.Fatalf("pod %d parsed differently the second time", i)
			}
		}
	})
}
