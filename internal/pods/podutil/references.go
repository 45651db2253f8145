package podutil

import (
	v1 "k8s.io/api/core/v1"
)

// allContainers visits the init, regular and ephemeral containers' env
// and envFrom, as upstream's VisitContainers(AllContainers) does.
func allContainers(spec *v1.PodSpec, visit func(env []v1.EnvVar, from []v1.EnvFromSource)) {
	for i := range spec.InitContainers {
		visit(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		visit(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		visit(c.Env, c.EnvFrom)
	}
}

// ConfigMapNames returns the names of the config maps the pod references
// (env valueFrom, envFrom, configMap volumes and projected sources), each
// once, in the order upstream's VisitPodConfigmapNames visits them; empty
// names are skipped.
func ConfigMapNames(pod *v1.Pod) []string {
	var names uniqueNames
	allContainers(&pod.Spec, func(env []v1.EnvVar, from []v1.EnvFromSource) {
		for _, f := range from {
			if f.ConfigMapRef != nil {
				names.add(f.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				names.add(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	})
	for i := range pod.Spec.Volumes {
		src := &pod.Spec.Volumes[i].VolumeSource
		switch {
		case src.Projected != nil:
			for _, p := range src.Projected.Sources {
				if p.ConfigMap != nil {
					names.add(p.ConfigMap.Name)
				}
			}
		case src.ConfigMap != nil:
			names.add(src.ConfigMap.Name)
		}
	}
	return names.list
}

// SecretNames returns the names of the secrets the pod references
// (imagePullSecrets, env valueFrom, envFrom, secret volumes, projected
// sources and the secretRefs of volume plugins), each once, in the order
// upstream's VisitPodSecretNames visits them; empty names are skipped.
func SecretNames(pod *v1.Pod) []string {
	var names uniqueNames
	for _, ref := range pod.Spec.ImagePullSecrets {
		names.add(ref.Name)
	}
	allContainers(&pod.Spec, func(env []v1.EnvVar, from []v1.EnvFromSource) {
		for _, f := range from {
			if f.SecretRef != nil {
				names.add(f.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				names.add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	})
	ref := func(r *v1.LocalObjectReference) {
		if r != nil {
			names.add(r.Name)
		}
	}
	for i := range pod.Spec.Volumes {
		src := &pod.Spec.Volumes[i].VolumeSource
		switch {
		case src.AzureFile != nil:
			names.add(src.AzureFile.SecretName)
		case src.CephFS != nil:
			ref(src.CephFS.SecretRef)
		case src.Cinder != nil:
			ref(src.Cinder.SecretRef)
		case src.FlexVolume != nil:
			ref(src.FlexVolume.SecretRef)
		case src.Projected != nil:
			for _, p := range src.Projected.Sources {
				if p.Secret != nil {
					names.add(p.Secret.Name)
				}
			}
		case src.RBD != nil:
			ref(src.RBD.SecretRef)
		case src.Secret != nil:
			names.add(src.Secret.SecretName)
		case src.ScaleIO != nil:
			ref(src.ScaleIO.SecretRef)
		case src.ISCSI != nil:
			ref(src.ISCSI.SecretRef)
		case src.StorageOS != nil:
			if src.StorageOS.SecretRef != nil {
				names.add(src.StorageOS.SecretRef.Name)
			}
		case src.CSI != nil:
			ref(src.CSI.NodePublishSecretRef)
		}
	}
	return names.list
}

// uniqueNames collects non-empty names once each, in first-seen order.
type uniqueNames struct {
	list []string
	seen map[string]bool
}

func (u *uniqueNames) add(name string) {
	if name == "" || u.seen[name] {
		return
	}
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	u.seen[name] = true
	u.list = append(u.list, name)
}
