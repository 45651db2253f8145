package podspec

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// FuzzSetDefaultsAndValidate defaults and validates pods decoded from JSON
// (seeds: examples/pods and a pod using most fields, testdata/fuzz): it
// must never panic, and defaulting a defaulted pod changes nothing.
func FuzzSetDefaultsAndValidate(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		pod := &v1.Pod{}
		if err := json.Unmarshal(data, pod); err != nil {
			return
		}
		SetDefaults(pod)
		once := pod.DeepCopy()
		SetDefaults(pod)
		if !apiequality.Semantic.DeepEqual(once, pod) {
			t.Fatalf("defaulting is not idempotent:\nonce  %+v\ntwice %+v", once.Spec, pod.Spec)
		}
		_ = Validate(pod)
	})
}
