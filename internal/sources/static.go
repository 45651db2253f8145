package sources

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/seed-kubelet/kubelet/internal/pods/podspec"
	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

// staticOrigin says where static pods came from and who reads them.
type staticOrigin struct {
	NodeName string
	// Source is FileSource or HTTPSource.
	Source string
	// Location is the manifest file path or the URL.
	Location string
	// Now stamps the config.seen annotation.
	Now time.Time
	// LocalObjects (standalone mode) lets pods reference ConfigMaps and
	// Secrets, which the node then reads from local files; without it such
	// references are refused, as upstream refuses them for static pods.
	LocalObjects bool
	// ReadObjects reads ConfigMap and Secret documents beside the pods.
	ReadObjects bool
}

// parseStaticPods decodes data and gives every pod in it its static pod
// identity. It is all or nothing: one bad pod fails the whole input.
func parseStaticPods(data []byte, o staticOrigin) ([]*v1.Pod, error) {
	d := parseManifest(data, o)
	return d.pods, d.err
}

// parseManifest decodes data (with its ConfigMaps and Secrets when
// o.ReadObjects) and gives every pod its static pod identity. The pods are
// all or nothing: one bad pod fails them all, and never the objects.
func parseManifest(data []byte, o staticOrigin) decoded {
	d := decodeManifest(data, o.ReadObjects)
	for _, pod := range d.pods {
		name := pod.Name
		if err := prepareStaticPod(pod, o); err != nil {
			if name != "" {
				err = fmt.Errorf("pod %q: %w", name, err)
			}
			d.pods, d.err = nil, err
			break
		}
	}
	return d
}

// prepareStaticPod turns a pod as read from a manifest into the pod the
// kubelet runs: a stable UID, a node-unique name, the node binding, the
// kubelet's annotations, API defaults, and validation the API server would
// otherwise have done. It mutates pod in place.
func prepareStaticPod(pod *v1.Pod, o staticOrigin) error {
	if errs := checkStaticPod(pod, o); len(errs) > 0 {
		return fmt.Errorf("invalid pod: %w", errs.ToAggregate())
	}
	return nil
}

// checkStaticPod is prepareStaticPod, with the problems as field errors.
func checkStaticPod(pod *v1.Pod, o staticOrigin) field.ErrorList {
	if pod.Name == "" {
		return field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}
	}
	if pod.UID == "" {
		uid, err := staticPodUID(pod, o)
		if err != nil {
			return field.ErrorList{field.InternalError(field.NewPath("metadata", "uid"), err)}
		}
		pod.UID = uid
	}
	pod.Name = StaticPodName(pod.Name, o.NodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = o.NodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podutil.ConfigHashAnnotationKey] = string(pod.UID)
	pod.Annotations[podutil.ConfigSourceAnnotationKey] = o.Source
	pod.Annotations[podutil.ConfigFirstSeenAnnotationKey] = o.Now.Format(time.RFC3339Nano)
	if o.Source == FileSource {
		// Like upstream, only file pods get this toleration, so node
		// problems (NoExecute taints) do not reject or evict them.
		addOrUpdateToleration(&pod.Spec, v1.Toleration{
			Operator: v1.TolerationOpExists,
			Effect:   v1.TaintEffectNoExecute,
		})
	}
	pod.Status.Phase = v1.PodPending

	podspec.SetDefaults(pod)
	if errs := podspec.Validate(pod); len(errs) > 0 {
		return errs
	}
	if resource := apiObjectReference(pod, o.LocalObjects); resource != "" {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "static pods may not reference "+resource)}
	}
	return nil
}

// PrepareManifestPod returns the pod the file source makes of pod when it
// reads it from the manifest file location (on nodeName, at now, with
// local object references allowed or not), and the field errors that make
// the source refuse it. pod is not modified.
func PrepareManifestPod(pod *v1.Pod, nodeName, location string, localObjects bool, now time.Time) (*v1.Pod, field.ErrorList) {
	out := pod.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{}
	errs := checkStaticPod(out, staticOrigin{NodeName: nodeName, Source: FileSource, Location: location, Now: now, LocalObjects: localObjects})
	return out, errs
}

// ManifestPodName is the name a manifest gives the static pod the kubelet
// runs as name on nodeName, if name is such a pod's name.
func ManifestPodName(name, nodeName string) (string, bool) {
	return strings.CutSuffix(name, "-"+strings.ToLower(nodeName))
}

// StaticPodName makes a pod name unique among nodes.
func StaticPodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// staticPodUID hashes the pod as read together with the node and the
// manifest location, so the same manifest keeps its UID across restarts
// while the same content at another path or on another node does not
// collide. Go's JSON encoding is deterministic (sorted map keys).
func staticPodUID(pod *v1.Pod, o staticOrigin) (types.UID, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("hashing pod %q: %w", pod.Name, err)
	}
	h := fnv.New128a()
	fmt.Fprintf(h, "host:%s\n", o.NodeName)
	fmt.Fprintf(h, "%s:%s\n", o.Source, o.Location)
	h.Write(data)
	return types.UID(hex.EncodeToString(h.Sum(nil))), nil
}

// addOrUpdateToleration adds t, replacing a toleration that matches it on
// key, operator, value and effect (dropping, say, its tolerationSeconds).
func addOrUpdateToleration(spec *v1.PodSpec, t v1.Toleration) {
	for i := range spec.Tolerations {
		if spec.Tolerations[i].MatchToleration(&t) {
			spec.Tolerations[i] = t
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, t)
}

// apiObjectReference returns the kind of API object the pod refers to, or
// "" when it refers to none. Static pods run without the API server's
// authorization of such references, so the kubelet refuses them. With
// localObjects (standalone mode) ConfigMaps and Secrets are the node's own
// local objects, which env, envFrom, configMap, secret and projected
// volumes and imagePullSecrets may name; every other reference is still
// refused.
func apiObjectReference(pod *v1.Pod, localObjects bool) string {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" || spec.DeprecatedServiceAccount != "" {
		return "serviceaccounts"
	}
	if len(spec.ImagePullSecrets) > 0 && !localObjects {
		return "secrets (via imagePullSecrets)"
	}
	var envs []v1.EnvVar
	var envFroms []v1.EnvFromSource
	for _, c := range spec.InitContainers {
		envs, envFroms = append(envs, c.Env...), append(envFroms, c.EnvFrom...)
	}
	for _, c := range spec.Containers {
		envs, envFroms = append(envs, c.Env...), append(envFroms, c.EnvFrom...)
	}
	for _, c := range spec.EphemeralContainers {
		envs, envFroms = append(envs, c.Env...), append(envFroms, c.EnvFrom...)
	}
	for _, e := range envs {
		if localObjects {
			break
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return "secrets (via env)"
		}
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			return "configmaps (via env)"
		}
	}
	for _, e := range envFroms {
		if localObjects {
			break
		}
		if e.SecretRef != nil {
			return "secrets (via envFrom)"
		}
		if e.ConfigMapRef != nil {
			return "configmaps (via envFrom)"
		}
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	for i := range spec.Volumes {
		if r := volumeAPIReference(&spec.Volumes[i].VolumeSource, localObjects); r != "" {
			return r
		}
	}
	return ""
}

// volumeAPIReference returns the API object kind a volume source needs, but
// for local ConfigMaps and Secrets with localObjects.
func volumeAPIReference(v *v1.VolumeSource, localObjects bool) string {
	switch {
	case v.Secret != nil && !localObjects:
		return "secrets (via secret volumes)"
	case v.ConfigMap != nil && !localObjects:
		return "configmaps (via configmap volumes)"
	case v.AzureFile != nil:
		return "secrets (via azureFile volumes)"
	case v.CephFS != nil && v.CephFS.SecretRef != nil,
		v.Cinder != nil && v.Cinder.SecretRef != nil,
		v.FlexVolume != nil && v.FlexVolume.SecretRef != nil,
		v.ISCSI != nil && v.ISCSI.SecretRef != nil,
		v.RBD != nil && v.RBD.SecretRef != nil,
		v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
		v.StorageOS != nil && v.StorageOS.SecretRef != nil:
		return "secrets (via volume secretRef)"
	case v.CSI != nil:
		return "csidrivers (via CSI volumes)"
	case v.Glusterfs != nil:
		return "endpoints (via glusterFS volumes)"
	case v.PersistentVolumeClaim != nil:
		return "persistentvolumeclaims"
	case v.Ephemeral != nil:
		return "persistentvolumeclaims (via ephemeral volumes)"
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.Secret != nil && !localObjects:
				return "secrets (via projected volumes)"
			case s.ConfigMap != nil && !localObjects:
				return "configmaps (via projected volumes)"
			case s.ServiceAccountToken != nil:
				return "serviceaccounts (via projected volumes)"
			case s.ClusterTrustBundle != nil:
				return "clustertrustbundles"
			case s.PodCertificate != nil:
				return "podcertificates"
			}
		}
	}
	return ""
}
