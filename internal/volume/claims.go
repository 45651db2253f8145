package volume

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ClaimOf returns the claim a pod volume reads: a persistentVolumeClaim's
// claimName (with its readOnly), or <pod>-<volume> for a generic ephemeral
// volume, the claim kube-controller-manager creates from the template.
// ok is false for other volumes. It is pure.
func ClaimOf(pod *v1.Pod, vol *v1.Volume) (name string, readOnly, ephemeral, ok bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, vol.PersistentVolumeClaim.ReadOnly, false, true
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name, false, true, true
	}
	return "", false, false, false
}

// ClaimError is a claim (or its volume) that cannot be used yet; the
// message is upstream's "error processing PVC ns/name: ...".
type ClaimError struct {
	Namespace, Name string
	Err             error
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("error processing PVC %s/%s: %v", e.Namespace, e.Name, e.Err)
}
func (e *ClaimError) Unwrap() error { return e.Err }

// CheckClaim says whether a fetched claim can back the pod volume, with
// upstream's wording: it must be bound to a volume, not being deleted, and
// for a generic ephemeral volume owned by the pod. It is pure.
func CheckClaim(pod *v1.Pod, ephemeral bool, pvc *v1.PersistentVolumeClaim) error {
	if ephemeral {
		owned := false
		for _, ref := range pvc.OwnerReferences {
			owned = owned || (ref.Controller != nil && *ref.Controller && ref.UID == pod.UID)
		}
		if !owned {
			return fmt.Errorf("PVC was not created for pod %s/%s (pod is not owner)", pod.Namespace, pod.Name)
		}
	}
	if pvc.DeletionTimestamp != nil {
		return errors.New("PVC is being deleted")
	}
	if pvc.Status.Phase != v1.ClaimBound {
		return errors.New("PVC is not bound")
	}
	if pvc.Spec.VolumeName == "" {
		return errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	return nil
}

// CheckBinding says whether the volume the claim names is bound to it.
// It is pure.
func CheckBinding(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	if pv.Spec.ClaimRef == nil {
		return fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name)
	}
	if pv.Spec.ClaimRef.UID != pvc.UID {
		return fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID (%s) does not point to claim.UID (%s)", pv.Name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	return nil
}

// CheckVolumeMode matches the volume's mode with how the pod's containers
// use it: a Filesystem volume only in volumeMounts, a Block volume only in
// volumeDevices. It is pure; the wording is upstream's.
func CheckVolumeMode(pod *v1.Pod, volName string, pv *v1.PersistentVolume) error {
	block := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock
	mounted, devices := false, false
	each := func(mounts []v1.VolumeMount, devs []v1.VolumeDevice) {
		for _, m := range mounts {
			mounted = mounted || m.Name == volName
		}
		for _, d := range devs {
			devices = devices || d.Name == volName
		}
	}
	for _, c := range pod.Spec.InitContainers {
		each(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		each(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		each(c.VolumeMounts, c.VolumeDevices)
	}
	switch {
	case block && mounted:
		return fmt.Errorf("volume %s has volumeMode Block, but is specified in volumeMounts", volName)
	case !block && devices:
		return fmt.Errorf("volume %s has volumeMode Filesystem, but is specified in volumeDevices", volName)
	}
	return nil
}

// SourceName names the one volume source set in a VolumeSource or a
// PersistentVolumeSource by its field's JSON name ("nfs", "csi", ...), for
// error messages; "" when none is set.
func SourceName(src any) string {
	v := reflect.ValueOf(src)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}
