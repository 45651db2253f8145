package volume

import (
	"fmt"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// ImageVolumeSupport says whether a runtime (CRI Version's name and
// version) mounts image volumes: containerd from 2.1 and CRI-O from 1.31
// do; older ones would ignore the mount's image and fail or mount nothing,
// so the kubelet refuses the volume with this error instead. Unknown
// runtimes are trusted. It is pure.
func ImageVolumeSupport(runtimeName, runtimeVersion string) error {
	var min string
	switch strings.ToLower(runtimeName) {
	case "containerd":
		min = "2.1.0"
	case "cri-o":
		min = "1.31.0"
	default:
		return nil
	}
	// Distributions add suffixes ("1.6.20~ds1"): read the leading numbers.
	num := strings.TrimPrefix(runtimeVersion, "v")
	if i := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num = num[:i]
	}
	v, err := utilversion.ParseGeneric(num)
	if err != nil {
		return nil
	}
	if v.LessThan(utilversion.MustParseGeneric(min)) {
		return fmt.Errorf("image volumes are not supported by the container runtime %s %s (they need %s %s or later)", runtimeName, runtimeVersion, runtimeName, min)
	}
	return nil
}
