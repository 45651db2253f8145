package allocation

import (
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// equalResources compares requirements semantically (1000m == 1).
func equalResources(a, b v1.ResourceRequirements) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}
