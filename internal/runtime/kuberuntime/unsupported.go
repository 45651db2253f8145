package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/seed-kubelet/kubelet/internal/volume"
)

// UnsupportedFeatures lists what a pod asks for that this kubelet does not
// do yet, so the pod gets a warning event instead of silent ignoring. It is
// pure.
func UnsupportedFeatures(pod *v1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.EmptyDir != nil, vol.HostPath != nil, vol.ConfigMap != nil, vol.Secret != nil, vol.DownwardAPI != nil,
			vol.PersistentVolumeClaim != nil, vol.Ephemeral != nil, vol.CSI != nil, vol.Image != nil:
		case vol.Projected != nil:
			for _, src := range vol.Projected.Sources {
				if src.ClusterTrustBundle != nil || src.PodCertificate != nil {
					out = append(out, fmt.Sprintf("volume %q trust-bundle/certificate projections", vol.Name))
					break
				}
			}
		default:
			out = append(out, fmt.Sprintf("volume %q (%s)", vol.Name, volume.SourceName(&vol.VolumeSource)))
		}
	}
	return out
}
