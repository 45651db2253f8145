package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Upstream's messages for a pod over one of its local ephemeral storage
// limits (localStorageCapacityIsolation).
const (
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
)

// The eviction_signal label of kubelet_evictions for those evictions.
const (
	SignalEmptyDirFsLimit           = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit = "ephemeralcontainerfs.limit"
)

// LocalStorageViolation is why a pod must go for its own storage use.
type LocalStorageViolation struct {
	// Signal is the eviction_signal label.
	Signal string
	// Message is the status message and Evicted event, upstream's words.
	Message string
}

// LocalStorageLimitExceeded decides, as upstream's localStorageEviction,
// whether pod uses more local ephemeral storage than it may, checking in
// upstream's order: an emptyDir over its sizeLimit (by the volume's
// measured usage), then the pod's ephemeral storage (writable layers, logs,
// local volumes) over the sum of its containers' ephemeral-storage limits,
// then a container's logs (plus writable layer, unless the images have
// their own filesystem) over its own limit. It is pure.
func LocalStorageLimitExceeded(pod *v1.Pod, ps statsapi.PodStats, dedicatedImageFs bool) (LocalStorageViolation, bool) {
	used := map[string]*resource.Quantity{}
	for _, v := range ps.VolumeStats {
		if v.UsedBytes != nil {
			used[v.Name] = resource.NewQuantity(int64(*v.UsedBytes), resource.BinarySI)
		}
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.EmptyDir == nil {
			continue
		}
		size, u := v.EmptyDir.SizeLimit, used[v.Name]
		if u != nil && size != nil && size.Sign() == 1 && u.Cmp(*size) > 0 {
			return LocalStorageViolation{Signal: SignalEmptyDirFsLimit, Message: fmt.Sprintf(emptyDirMessageFmt, v.Name, size.String())}, true
		}
	}

	// As upstream: the pod's limits (overhead added to a set limit).
	if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceEphemeralStorage]; ok {
		total := resource.Quantity{}
		if ps.EphemeralStorage != nil && ps.EphemeralStorage.UsedBytes != nil {
			total = *resource.NewQuantity(int64(*ps.EphemeralStorage.UsedBytes), resource.BinarySI)
		}
		if total.Cmp(limit) > 0 {
			return LocalStorageViolation{Signal: SignalEphemeralPodFsLimit, Message: fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())}, true
		}
	}

	limits := map[string]*resource.Quantity{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if l := c.Resources.Limits.StorageEphemeral(); l != nil && l.Value() != 0 {
			limits[c.Name] = l
		}
	}
	for _, cs := range ps.Containers {
		limit, ok := limits[cs.Name]
		if !ok {
			continue
		}
		u := fsUsed(cs.Logs)
		if !dedicatedImageFs {
			u.Add(fsUsed(cs.Rootfs))
		}
		if limit.Cmp(u) < 0 {
			return LocalStorageViolation{Signal: SignalEphemeralContainerFsLimit, Message: fmt.Sprintf(containerEphemeralStorageMessageFmt, cs.Name, limit.String())}, true
		}
	}
	return LocalStorageViolation{}, false
}

func fsUsed(fs *statsapi.FsStats) resource.Quantity {
	if fs == nil || fs.UsedBytes == nil {
		return *resource.NewQuantity(0, resource.BinarySI)
	}
	return *resource.NewQuantity(int64(*fs.UsedBytes), resource.BinarySI)
}

// LocalStorageEvictedStatus is the status of a pod evicted for its own
// storage use: phase Failed, reason Evicted and the message; unlike a
// pressure eviction, upstream adds no DisruptionTarget condition here.
func LocalStorageEvictedStatus(message string) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodFailed, Reason: Reason, Message: message}
}
