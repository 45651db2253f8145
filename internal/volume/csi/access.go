package csi

import (
	"fmt"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Volume context keys the kubelet adds (podInfoOnMount, tokenRequests).
const (
	ctxPodName        = "csi.storage.k8s.io/pod.name"
	ctxPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	ctxPodUID         = "csi.storage.k8s.io/pod.uid"
	ctxServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
	ctxEphemeral      = "csi.storage.k8s.io/ephemeral"
	ctxTokens         = "csi.storage.k8s.io/serviceAccount.tokens"
)

// AccessMode maps a Kubernetes access mode to CSI's, as upstream: a
// ReadWriteOnce volume is SINGLE_NODE_MULTI_WRITER when the driver has that
// capability, ReadWriteOncePod SINGLE_NODE_SINGLE_WRITER likewise. It is pure.
func AccessMode(am v1.PersistentVolumeAccessMode, singleNodeMultiWriter bool) csipb.VolumeCapability_AccessMode_Mode {
	switch am {
	case v1.ReadWriteOnce:
		if singleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case v1.ReadWriteOncePod:
		if singleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN
}

// Capability is the volume capability sent with NodeStage/NodePublish.
func Capability(block bool, fsType string, mountFlags []string, am csipb.VolumeCapability_AccessMode_Mode, mountGroup string) *csipb.VolumeCapability {
	c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: am}}
	if block {
		c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: fsType, MountFlags: mountFlags, VolumeMountGroup: mountGroup}}
	}
	return c
}

// AttachRequired reports whether volumes of the driver wait for a
// VolumeAttachment: yes unless its CSIDriver says attachRequired: false (no
// CSIDriver object means attach is required, as upstream). It is pure.
func AttachRequired(d *storagev1.CSIDriver) bool {
	return d == nil || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// CheckLifecycleMode fails when the driver does not support the mode: a
// persistent volume needs no CSIDriver; an ephemeral one needs a CSIDriver
// that lists Ephemeral. It is pure; the wording is upstream's.
func CheckLifecycleMode(driver string, d *storagev1.CSIDriver, mode storagev1.VolumeLifecycleMode) error {
	switch {
	case d == nil && mode == storagev1.VolumeLifecyclePersistent:
		return nil
	case d == nil:
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, driver)
	}
	modes := d.Spec.VolumeLifecycleModes
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	for _, m := range modes {
		if m == mode {
			return nil
		}
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, driver, modes)
}

// FSGroupPolicy is the driver's fsGroupPolicy (ReadWriteOnceWithFSType when
// there is no CSIDriver or it sets none). It is pure.
func FSGroupPolicy(d *storagev1.CSIDriver) storagev1.FSGroupPolicy {
	if d == nil || d.Spec.FSGroupPolicy == nil || *d.Spec.FSGroupPolicy == "" {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	}
	return *d.Spec.FSGroupPolicy
}

// KubeletAppliesFSGroup decides whether the kubelet changes the volume's
// ownership to the pod's fsGroup after NodePublishVolume, as upstream's
// supportsFSGroup: never without an fsGroup, for a read-only volume, with
// policy None or when the driver applies it (VOLUME_MOUNT_GROUP); always
// with policy File; with ReadWriteOnceWithFSType only when the volume has an
// fsType and (for a persistent volume) the ReadWriteOnce access mode; inline
// volumes count as ReadWriteOnce. It is pure.
func KubeletAppliesFSGroup(fsGroup *int64, readOnly bool, policy storagev1.FSGroupPolicy, driverMountGroup bool, fsType string, pv *v1.PersistentVolume) bool {
	if fsGroup == nil || readOnly || policy == storagev1.NoneFSGroupPolicy || driverMountGroup {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	if fsType == "" {
		return false
	}
	if pv == nil {
		return true
	}
	for _, m := range pv.Spec.AccessModes {
		if m == v1.ReadWriteOnce {
			return true
		}
	}
	return false
}

// PodInfo is the volume context podInfoOnMount adds. It is pure.
func PodInfo(pod *v1.Pod, ephemeral bool) map[string]string {
	return map[string]string{
		ctxPodName:        pod.Name,
		ctxPodNamespace:   pod.Namespace,
		ctxPodUID:         string(pod.UID),
		ctxServiceAccount: pod.Spec.ServiceAccountName,
		ctxEphemeral:      strconv.FormatBool(ephemeral),
	}
}

// mergeContext returns base with extra's keys added (a new map).
func mergeContext(base map[string]string, extra ...map[string]string) map[string]string {
	out := make(map[string]string, len(base))
	for k, v := range base {
		out[k] = v
	}
	for _, m := range extra {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
