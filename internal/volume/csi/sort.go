package csi

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

func containsUnique(names []v1.UniqueVolumeName, name string) bool {
	return slices.Contains(names, v1.UniqueVolumeName(name))
}

func sortUnique(names []v1.UniqueVolumeName) { slices.Sort(names) }
