package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Failure is one volume that could not be set up.
type Failure struct {
	Volume string
	Err    error
}

// Message is the FailedMount event message upstream writes for it.
func (f Failure) Message() string {
	if msg, ok := pluginFailureMessage(f); ok {
		return msg
	}
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", f.Volume, f.Err)
}

// SetUpResult is what SetUpPod did.
type SetUpResult struct {
	// Failed lists the volumes whose set-up failed in this call.
	Failed []Failure
	// Unmounted names the volumes the pod's containers use that are not
	// set up yet; the pod's containers must not start while it is non-empty.
	Unmounted []string
}

// UsedVolumes returns the names of the volumes some container of pod (init,
// app or ephemeral) mounts or maps as a device, in spec order; unused volumes are never set
// up, as upstream. It is pure.
func UsedVolumes(pod *v1.Pod) []string {
	used := map[string]bool{}
	add := func(mounts []v1.VolumeMount, devices []v1.VolumeDevice) {
		for _, vm := range mounts {
			used[vm.Name] = true
		}
		for _, vd := range devices {
			used[vd.Name] = true
		}
	}
	for i := range pod.Spec.InitContainers {
		add(pod.Spec.InitContainers[i].VolumeMounts, pod.Spec.InitContainers[i].VolumeDevices)
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].VolumeMounts, pod.Spec.Containers[i].VolumeDevices)
	}
	for i := range pod.Spec.EphemeralContainers {
		add(pod.Spec.EphemeralContainers[i].VolumeMounts, pod.Spec.EphemeralContainers[i].VolumeDevices)
	}
	var out []string
	for i := range pod.Spec.Volumes {
		if used[pod.Spec.Volumes[i].Name] {
			out = append(out, pod.Spec.Volumes[i].Name)
		}
	}
	return out
}

// SetUpPod sets up every volume the pod's containers use that is not set
// up yet (upstream's volume manager mounting before the containers start).
// Volumes already set up are left to Refresh: a source that disappears
// later never takes a volume away from a running pod.
func (m *Manager) SetUpPod(ctx context.Context, pod *v1.Pod) SetUpResult {
	uid := string(pod.UID)
	l := m.podLock(uid)
	l.Lock()
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	vols := map[string]*v1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var res SetUpResult
	for _, name := range UsedVolumes(pod) {
		if _, err := m.ensure(ctx, pod, vols[name]); err != nil {
			res.Failed = append(res.Failed, Failure{Volume: name, Err: err})
			res.Unmounted = append(res.Unmounted, name)
		}
	}
	return res
}

// ensure sets vol up unless it already is, and returns its host path.
// Callers hold the pod lock.
func (m *Manager) ensure(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, error) {
	uid := string(pod.UID)
	if isPluginVolume(vol) {
		return m.ensurePlugin(ctx, pod, vol)
	}
	if m.isReady(uid, vol.Name) || m.publishedBefore(uid, vol) {
		if vol.HostPath != nil {
			return vol.HostPath.Path, nil
		}
		if vol.EmptyDir == nil || vol.EmptyDir.Medium != v1.StorageMediumMemory {
			return VolumeDir(m.cfg.PodsDir, uid, vol), nil
		}
		// A tmpfs is checked (and mounted again) at each use.
	}
	p, err := m.setUp(ctx, pod, vol)
	if err != nil {
		return "", err
	}
	if !m.isReady(uid, vol.Name) {
		klog.V(3).InfoS("Volume set up", "pod", klog.KObj(pod), "volume", vol.Name, "path", p)
	}
	m.markReady(uid, vol.Name)
	return p, nil
}

// publishedBefore reports whether an API data volume was published by an
// earlier kubelet process (a restart must not make a running pod's volume
// depend on its source again).
func (m *Manager) publishedBefore(uid string, vol *v1.Volume) bool {
	if !isAPIData(vol) {
		return false
	}
	_, err := os.Lstat(filepath.Join(VolumeDir(m.cfg.PodsDir, uid, vol), dataDirName))
	if err == nil {
		m.markReady(uid, vol.Name)
	}
	return err == nil
}
