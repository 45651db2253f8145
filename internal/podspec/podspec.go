package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SetDefaults fills in the fields the API server would default on a v1 Pod.
func SetDefaults(pod *v1.Pod) {}

// Validate checks a (defaulted) pod the way the API server would on create.
func Validate(pod *v1.Pod) field.ErrorList { return nil }
