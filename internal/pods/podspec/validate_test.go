package podspec

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rawPod is a realistic static pod before defaulting: an init container, a
// sidecar, one app container with probes, hooks, env, resources and mounts.
func rawPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-node1", Namespace: "kube-system",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"kubernetes.io/config.source": "file"},
		},
		Spec: v1.PodSpec{
			NodeName: "node1",
			InitContainers: []v1.Container{
				{Name: "setup", Image: "busybox:1.36", Command: []string{"true"}},
				{
					Name: "proxy", Image: "envoy:1", RestartPolicy: ptrTo(v1.ContainerRestartPolicyAlways),
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(9901)}}},
				},
			},
			Containers: []v1.Container{{
				Name: "web", Image: "nginx:1.27",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env: []v1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "MODE", Value: "prod"},
				},
				Resources: v1.ResourceRequirements{
					Limits:   resources("cpu", "500m", "memory", "128Mi"),
					Requests: resources("cpu", "250m"),
				},
				VolumeMounts:  []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "config", MountPath: "/etc/config", ReadOnly: true}},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
				Lifecycle:     &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}},
			}},
			Volumes: []v1.Volume{
				{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "logs", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}},
			},
			SecurityContext: &v1.PodSecurityContext{
				RunAsUser: ptrTo(int64(1000)),
				Sysctls:   []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}},
			},
			DNSConfig: &v1.PodDNSConfig{Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("2")}}},
		},
	}
}

func validPod() *v1.Pod {
	pod := rawPod()
	SetDefaults(pod)
	return pod
}

// errKeys renders errors as sorted "Type path" strings.
func errKeys(errs field.ErrorList) []string {
	keys := make([]string, 0, len(errs))
	for _, e := range errs {
		keys = append(keys, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	slices.Sort(keys)
	return keys
}

func want(pairs ...any) []string {
	keys := make([]string, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		keys = append(keys, fmt.Sprintf("%s %s", pairs[i].(field.ErrorType), pairs[i+1].(string)))
	}
	slices.Sort(keys)
	return keys
}

const (
	errRequired  = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	duplicate    = field.ErrorTypeDuplicate
	notSupported = field.ErrorTypeNotSupported
	forbidden    = field.ErrorTypeForbidden
	notFound     = field.ErrorTypeNotFound
	tooMany      = field.ErrorTypeTooMany
)

func TestValidateAcceptsValidPods(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
	}{
		{"baseline static pod", func(p *v1.Pod) {}},
		{"relaxed env var name with dots, dashes and spaces", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "my.var-1 x", Value: "v"})
		}},
		{"env from a config map with a prefix", func(p *v1.Pod) {
			p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
		}},
		{"env from a label subscript", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}})
		}},
		{"env from a resource with a divisor", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}})
		}},
		{"sidecar with liveness probe and hooks", func(p *v1.Pod) {
			p.Spec.InitContainers[1].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			p.Spec.InitContainers[1].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}},
		{"try-once init container", func(p *v1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptrTo(v1.ContainerRestartPolicyNever)
		}},
		{"regular container restart rules", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = ptrTo(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
				Action:    v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
			}}
		}},
		{"dnsPolicy None with nameservers and searches", func(p *v1.Pod) {
			p.Spec.DNSPolicy = v1.DNSNone
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Searches: []string{"svc.cluster.local", "_tcp.example.com.", "."}}
		}},
		{"host network with defaulted host ports", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.DNSPolicy = v1.DNSClusterFirstWithHostNet
		}},
		{"image volume mounted read-only", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "tools:1"}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "tools", MountPath: "/tools", ReadOnly: true})
		}},
		{"subPath into an image volume (since v1.33)", func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "tools:1"}}})
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "tools", MountPath: "/tools", SubPath: "bin"})
		}},
		{"projected token with a service account", func(p *v1.Pod) {
			p.Spec.ServiceAccountName = "web"
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}})
		}},
		{"extended resource with equal whole request and limit", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits["example.com/gpu"] = resource.MustParse("1")
		}},
		{"huge pages beside memory", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits["hugepages-2Mi"] = resource.MustParse("4Mi")
		}},
		{"pod-level resources covering the containers", func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: resources("cpu", "2", "memory", "1Gi")}
		}},
		{"regular mount propagation on a privileged container", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptrTo(true)}
			p.Spec.Containers[0].VolumeMounts[0].MountPropagation = ptrTo(v1.MountPropagationBidirectional)
		}},
		{"linux pod with seccomp and apparmor", func(p *v1.Pod) {
			p.Spec.OS = &v1.PodOS{Name: v1.Linux}
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("k8s-web")}
			p.Annotations[v1.SeccompPodAnnotationKey] = v1.SeccompProfileRuntimeDefault
		}},
		{"tolerations and host aliases", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
			p.Spec.HostAliases = []v1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{"web.local"}}}
		}},
		{"mirror annotation with a node name", func(p *v1.Pod) {
			p.Annotations[v1.MirrorPodAnnotationKey] = "hash"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := rawPod()
			tt.mutate(pod)
			SetDefaults(pod)
			if errs := Validate(pod); len(errs) != 0 {
				t.Errorf("Validate() = %v, want no errors", errs)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	c0 := func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] }
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   []string
	}{
		// metadata
		{"missing name", func(p *v1.Pod) { p.Name = "" }, want(errRequired, "metadata.name")},
		{"name not a DNS subdomain", func(p *v1.Pod) { p.Name = "Web_1" }, want(invalid, "metadata.name")},
		{"missing namespace", func(p *v1.Pod) { p.Namespace = "" }, want(errRequired, "metadata.namespace")},
		{"namespace not a DNS label", func(p *v1.Pod) { p.Namespace = "kube.system" }, want(invalid, "metadata.namespace")},
		{"invalid label key", func(p *v1.Pod) { p.Labels["bad key"] = "v" }, want(invalid, "metadata.labels")},
		{"invalid label value", func(p *v1.Pod) { p.Labels["app"] = "has space" }, want(invalid, "metadata.labels")},
		{"invalid annotation key", func(p *v1.Pod) { p.Annotations["bad key"] = "v" }, want(invalid, "metadata.annotations")},
		{"mirror annotation without node name", func(p *v1.Pod) {
			p.Annotations[v1.MirrorPodAnnotationKey] = "x"
			p.Spec.NodeName = ""
		}, want(invalid, "metadata.annotations[kubernetes.io/config.mirror]")},
		{"deletion cost not an int32", func(p *v1.Pod) { p.Annotations[v1.PodDeletionCost] = "lots" },
			want(invalid, "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]")},
		{"seccomp annotation not a profile", func(p *v1.Pod) { p.Annotations[v1.SeccompPodAnnotationKey] = "bogus" },
			want(invalid, "metadata.annotations.seccomp.security.alpha.kubernetes.io/pod")},
		{"apparmor annotation for a missing container", func(p *v1.Pod) {
			p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"ghost"] = "runtime/default"
		}, want(invalid, "metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]")},
		{"seccomp annotation contradicts the field", func(p *v1.Pod) {
			p.Annotations[v1.SeccompPodAnnotationKey] = v1.SeccompProfileNameUnconfined
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
		}, want(forbidden, "spec.securityContext.seccompProfile.type")},

		// containers
		{"no containers", func(p *v1.Pod) { p.Spec.Containers = nil }, want(errRequired, "spec.containers")},
		{"container name missing", func(p *v1.Pod) { c0(p).Name = "" }, want(errRequired, "spec.containers[0].name")},
		{"container name not a DNS label", func(p *v1.Pod) { c0(p).Name = "Web" }, want(invalid, "spec.containers[0].name")},
		{"duplicate container names", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, *c0(p).DeepCopy())
		}, want(duplicate, "spec.containers[1].name")},
		{"init container name collides with a container", func(p *v1.Pod) { p.Spec.InitContainers[0].Name = "web" },
			want(duplicate, "spec.initContainers[0].name")},
		{"image missing", func(p *v1.Pod) { c0(p).Image = "" }, want(errRequired, "spec.containers[0].image")},
		{"image with surrounding whitespace", func(p *v1.Pod) { c0(p).Image = " nginx:1.27" }, want(invalid, "spec.containers[0].image")},
		{"init image missing", func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "" }, want(errRequired, "spec.initContainers[0].image")},
		{"imagePullPolicy missing", func(p *v1.Pod) { c0(p).ImagePullPolicy = "" }, want(errRequired, "spec.containers[0].imagePullPolicy")},
		{"imagePullPolicy unknown", func(p *v1.Pod) { c0(p).ImagePullPolicy = "Sometimes" }, want(notSupported, "spec.containers[0].imagePullPolicy")},
		{"terminationMessagePolicy unknown", func(p *v1.Pod) { c0(p).TerminationMessagePolicy = "Logs" },
			want(notSupported, "spec.containers[0].terminationMessagePolicy")},

		// ports
		{"containerPort missing", func(p *v1.Pod) { c0(p).Ports[0].ContainerPort = 0 }, want(errRequired, "spec.containers[0].ports[0].containerPort")},
		{"containerPort out of range", func(p *v1.Pod) { c0(p).Ports[0].ContainerPort = 70000 }, want(invalid, "spec.containers[0].ports[0].containerPort")},
		{"hostPort out of range", func(p *v1.Pod) { c0(p).Ports[0].HostPort = -1 }, want(invalid, "spec.containers[0].ports[0].hostPort")},
		{"protocol unknown", func(p *v1.Pod) { c0(p).Ports[0].Protocol = "ICMP" }, want(notSupported, "spec.containers[0].ports[0].protocol")},
		{"port name not IANA_SVC_NAME", func(p *v1.Pod) { c0(p).Ports[0].Name = "HTTP_1" }, want(invalid, "spec.containers[0].ports[0].name", invalid, "spec.containers[0].ports[0].name")}, // upper case and underscore
		{"duplicate port names", func(p *v1.Pod) {
			c0(p).Ports = append(c0(p).Ports, v1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: v1.ProtocolTCP})
		}, want(duplicate, "spec.containers[0].ports[1].name")},
		{"host port claimed twice", func(p *v1.Pod) {
			c0(p).Ports = []v1.ContainerPort{
				{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
				{ContainerPort: 81, HostPort: 8080, Protocol: v1.ProtocolTCP},
			}
		}, want(duplicate, "spec.containers[0].ports[1].hostPort")},
		{"host network with a different host port", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports[0].HostPort = 8080
		}, want(invalid, "spec.containers[0].ports[0].hostPort")},

		// env
		{"env name missing", func(p *v1.Pod) { c0(p).Env[1].Name = "" }, want(errRequired, "spec.containers[0].env[1].name")},
		{"env name with '='", func(p *v1.Pod) { c0(p).Env[1].Name = "A=B" }, want(invalid, "spec.containers[0].env[1].name")},
		{"env name with a control character", func(p *v1.Pod) { c0(p).Env[1].Name = "A\tB" }, want(invalid, "spec.containers[0].env[1].name")},
		{"valueFrom without a source", func(p *v1.Pod) { c0(p).Env[0].ValueFrom = &v1.EnvVarSource{} },
			want(invalid, "spec.containers[0].env[0].valueFrom")},
		{"valueFrom with two sources", func(p *v1.Pod) {
			c0(p).Env[0].ValueFrom.SecretKeyRef = &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k"}
		}, want(invalid, "spec.containers[0].env[0].valueFrom")},
		{"valueFrom beside a value", func(p *v1.Pod) { c0(p).Env[0].Value = "x" }, want(invalid, "spec.containers[0].env[0].valueFrom")},
		{"fieldRef path not allowed for env", func(p *v1.Pod) { c0(p).Env[0].ValueFrom.FieldRef.FieldPath = "status.phase" },
			want(notSupported, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath")},
		{"fieldRef path unknown", func(p *v1.Pod) { c0(p).Env[0].ValueFrom.FieldRef.FieldPath = "spec.hostname" },
			want(invalid, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath")},
		{"secretKeyRef key missing", func(p *v1.Pod) {
			c0(p).Env[0].ValueFrom = &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}
		}, want(errRequired, "spec.containers[0].env[0].valueFrom.secretKeyRef.key")},
		{"resourceFieldRef resource unknown", func(p *v1.Pod) {
			c0(p).Env[0].ValueFrom = &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.gpu"}}
		}, want(notSupported, "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource")},
		{"envFrom without a source", func(p *v1.Pod) { c0(p).EnvFrom = []v1.EnvFromSource{{Prefix: "X_"}} },
			want(invalid, "spec.containers[0].envFrom")},

		// volumes and mounts; a volume that fails validation cannot be
		// mounted either, so its mounts are reported NotFound as upstream does
		{"volume name not a DNS label", func(p *v1.Pod) { p.Spec.Volumes[2].Name = "Logs" }, want(invalid, "spec.volumes[2].name")},
		{"volume name missing", func(p *v1.Pod) { p.Spec.Volumes[2].Name = "" }, want(errRequired, "spec.volumes[2].name")},
		{"duplicate volume names", func(p *v1.Pod) { p.Spec.Volumes[2].Name = "data" }, want(duplicate, "spec.volumes[2].name")},
		{"volume without a source", func(p *v1.Pod) { p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{} }, want(errRequired, "spec.volumes[2]")},
		{"volume with two sources", func(p *v1.Pod) { p.Spec.Volumes[2].EmptyDir = &v1.EmptyDirVolumeSource{} },
			want(forbidden, "spec.volumes[2].hostPath")},
		{"hostPath path missing", func(p *v1.Pod) { p.Spec.Volumes[2].HostPath.Path = "" }, want(errRequired, "spec.volumes[2].hostPath.path")},
		{"hostPath path with backsteps", func(p *v1.Pod) { p.Spec.Volumes[2].HostPath.Path = "/var/../etc" }, want(invalid, "spec.volumes[2].hostPath.path")},
		{"hostPath type unknown", func(p *v1.Pod) { p.Spec.Volumes[2].HostPath.Type = ptrTo(v1.HostPathType("Pipe")) },
			want(notSupported, "spec.volumes[2].hostPath.type")},
		{"configMap name missing", func(p *v1.Pod) { p.Spec.Volumes[1].ConfigMap.Name = "" }, want(errRequired, "spec.volumes[1].configMap.name", notFound, "spec.containers[0].volumeMounts[1].name")},
		{"configMap defaultMode out of range", func(p *v1.Pod) { p.Spec.Volumes[1].ConfigMap.DefaultMode = ptrTo(int32(01000)) },
			want(invalid, "spec.volumes[1].configMap.defaultMode", notFound, "spec.containers[0].volumeMounts[1].name")},
		{"configMap item path absolute", func(p *v1.Pod) { p.Spec.Volumes[1].ConfigMap.Items = []v1.KeyToPath{{Key: "k", Path: "/abs"}} },
			want(invalid, "spec.volumes[1].configMap.items[0].path", notFound, "spec.containers[0].volumeMounts[1].name")},
		{"emptyDir negative size limit", func(p *v1.Pod) { p.Spec.Volumes[0].EmptyDir.SizeLimit = ptrTo(resource.MustParse("-1")) },
			want(forbidden, "spec.volumes[0].emptyDir.sizeLimit", notFound, "spec.containers[0].volumeMounts[0].name")},
		{"projected token without a service account", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptrTo(int32(0644)), Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrTo(int64(3600))}},
			}}}
		}, want(forbidden, "spec.volumes[2].projected.sources[0].serviceAccountToken")},
		{"secret volume without a secret name", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Secret: &v1.SecretVolumeSource{DefaultMode: ptrTo(int32(0644))}}
		}, want(errRequired, "spec.volumes[2].secret.secretName")},
		{"secret item mode out of range", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: ptrTo(int32(0644)),
				Items: []v1.KeyToPath{{Key: "k", Path: "p", Mode: ptrTo(int32(-1))}}}}
		}, want(invalid, "spec.volumes[2].secret.items[0].mode")},
		{"nfs path relative", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "export"}}
		}, want(invalid, "spec.volumes[2].nfs.path")},
		{"csi driver missing", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{CSI: &v1.CSIVolumeSource{}}
		}, want(errRequired, "spec.volumes[2].csi.driver", invalid, "spec.volumes[2].csi.driver")},
		{"ephemeral volume without a claim template", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}
		}, want(errRequired, "spec.volumes[2].ephemeral.volumeClaimTemplate")},
		{"ephemeral volume whose claim name is too long", func(p *v1.Pod) {
			p.Spec.Volumes[2].Name = strings.Repeat("v", 63)
			p.Name = strings.Repeat("p", 200)
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
				Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
			}}}
		}, want(invalid, "spec.volumes[2].name")},
		{"persistentVolumeClaim referencing an ephemeral claim", func(p *v1.Pod) {
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
				Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
			}}}
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "web-node1-data"}}
		}, want(invalid, "spec.volumes[2].persistentVolumeClaim.claimName")},
		{"gitRepo directory absolute", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{Repository: "https://example.com/r.git", Directory: "/abs"}}
		}, want(invalid, "spec.volumes[2].gitRepo.directory")},
		{"iscsi iqn malformed", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "bogus", Lun: 0, ISCSIInterface: "default"}}
		}, want(invalid, "spec.volumes[2].iscsi.iqn")},
		{"downwardAPI item without a source", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: ptrTo(int32(0644)),
				Items: []v1.DownwardAPIVolumeFile{{Path: "x"}}}}
		}, want(errRequired, "spec.volumes[2].downwardAPI")},
		{"downwardAPI resource item without a container", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: ptrTo(int32(0644)),
				Items: []v1.DownwardAPIVolumeFile{{Path: "x", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}}}}
		}, want(errRequired, "spec.volumes[2].downwardAPI.resourceFieldRef.containerName")},
		{"projected sources writing the same path", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptrTo(int32(0644)), Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "a"}, Items: []v1.KeyToPath{{Key: "k", Path: "same"}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "b"}, Items: []v1.KeyToPath{{Key: "k", Path: "same"}}}},
			}}}
		}, want(invalid, "spec.volumes[2].projected")},
		{"projected source with two kinds", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptrTo(int32(0644)), Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "a"}}, Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "b"}}},
			}}}
		}, want(forbidden, "spec.volumes[2].projected.sources[0]")},
		{"image volume without a reference", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Image: &v1.ImageVolumeSource{PullPolicy: v1.PullIfNotPresent}}
		}, want(errRequired, "spec.volumes[2].image.reference")},
		{"subPath leaving an image volume", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "tools:1", PullPolicy: v1.PullIfNotPresent}}
			c0(p).VolumeMounts = append(c0(p).VolumeMounts, v1.VolumeMount{Name: "logs", MountPath: "/tools", SubPath: "../bin"})
		}, want(invalid, "spec.containers[0].volumeMounts.subPath")},
		{"recursive read-only on a writable mount", func(p *v1.Pod) {
			c0(p).VolumeMounts[0].RecursiveReadOnly = ptrTo(v1.RecursiveReadOnlyEnabled)
		}, want(forbidden, "spec.containers[0].volumeMounts[0].recursiveReadOnly")},
		{"block device from a non-claim volume", func(p *v1.Pod) {
			c0(p).VolumeDevices = []v1.VolumeDevice{{Name: "logs", DevicePath: "/dev/xvda"}}
		}, want(invalid, "spec.containers[0].volumeDevices[0].name")},
		{"block device clashing with a mount", func(p *v1.Pod) {
			p.Spec.Volumes[2].VolumeSource = v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}
			c0(p).VolumeDevices = []v1.VolumeDevice{{Name: "logs", DevicePath: "/data"}}
		}, want(invalid, "spec.containers[0].volumeDevices[0].devicePath", invalid, "spec.containers[0].volumeMounts[0].mountPath")},
		{"env from a file without a key", func(p *v1.Pod) {
			c0(p).Env[1] = v1.EnvVar{Name: "F", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "data", Path: "../env", Optional: ptrTo(false)}}}
		}, want(invalid, "spec.containers[0].env[1].valueFrom.fileKeyRef.path", errRequired, "spec.containers[0].env[1].valueFrom.fileKeyRef.key")},
		{"resource claim not declared by the pod", func(p *v1.Pod) {
			c0(p).Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		}, want(notFound, "spec.containers[0].resources.claims[0]")},
		{"pod resource claim with neither source", func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}}
		}, want(invalid, "spec.resourceClaims[0]")},
		{"apparmor localhost without a profile", func(p *v1.Pod) {
			c0(p).SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost}}
		}, want(errRequired, "spec.containers[0].securityContext.appArmorProfile.localhostProfile")},
		{"mount of an unknown volume", func(p *v1.Pod) { c0(p).VolumeMounts[0].Name = "ghost" },
			want(notFound, "spec.containers[0].volumeMounts[0].name")},
		{"mount path missing", func(p *v1.Pod) { c0(p).VolumeMounts[0].MountPath = "" },
			want(errRequired, "spec.containers[0].volumeMounts[0].mountPath")},
		{"mount path repeated", func(p *v1.Pod) { c0(p).VolumeMounts[1].MountPath = "/data" },
			want(invalid, "spec.containers[0].volumeMounts[1].mountPath")},
		{"subPath escaping the volume", func(p *v1.Pod) { c0(p).VolumeMounts[0].SubPath = "../etc" },
			want(invalid, "spec.containers[0].volumeMounts.subPath")},
		{"bidirectional propagation unprivileged", func(p *v1.Pod) {
			c0(p).VolumeMounts[0].MountPropagation = ptrTo(v1.MountPropagationBidirectional)
		}, want(forbidden, "spec.containers[0].volumeMounts[0].mountPropagation")},

		// resources
		{"negative quantity", func(p *v1.Pod) { c0(p).Resources.Limits["ephemeral-storage"] = resource.MustParse("-1") },
			want(invalid, "spec.containers[0].resources.limits[ephemeral-storage]")},
		{"request above limit", func(p *v1.Pod) { c0(p).Resources.Requests["cpu"] = resource.MustParse("1") },
			want(invalid, "spec.containers[0].resources.requests")},
		{"unknown resource name", func(p *v1.Pod) { c0(p).Resources.Limits["gpus"] = resource.MustParse("1") },
			want(invalid, "spec.containers[0].resources.limits[gpus]")},
		{"fractional extended resource", func(p *v1.Pod) {
			c0(p).Resources.Limits["example.com/gpu"] = resource.MustParse("500m")
			c0(p).Resources.Requests["example.com/gpu"] = resource.MustParse("500m")
		}, want(invalid, "spec.containers[0].resources.limits[example.com/gpu]", invalid, "spec.containers[0].resources.requests[example.com/gpu]")},
		{"extended resource request without limit", func(p *v1.Pod) { c0(p).Resources.Requests["example.com/gpu"] = resource.MustParse("1") },
			want(errRequired, "spec.containers[0].resources.limits")},
		{"huge pages not a whole page", func(p *v1.Pod) {
			c0(p).Resources.Limits["hugepages-2Mi"] = resource.MustParse("3Mi")
			c0(p).Resources.Requests["hugepages-2Mi"] = resource.MustParse("3Mi")
		}, want(invalid, "spec.containers[0].resources.limits[hugepages-2Mi]", invalid, "spec.containers[0].resources.requests[hugepages-2Mi]")},
		{"pod-level resource not supported", func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: resources("cpu", "2", "memory", "1Gi", "ephemeral-storage", "1Gi")}
		}, want(notSupported, "spec.resources.limits[ephemeral-storage]")},
		{"pod-level requests below the containers", func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: resources("cpu", "100m")}
		}, want(invalid, "spec.resources.requests[cpu]")},

		// pod-wide fields
		{"restartPolicy missing", func(p *v1.Pod) { p.Spec.RestartPolicy = "" }, want(errRequired, "spec.restartPolicy")},
		{"restartPolicy unknown", func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, want(notSupported, "spec.restartPolicy")},
		{"dnsPolicy unknown", func(p *v1.Pod) { p.Spec.DNSPolicy = "Cluster" }, want(notSupported, "spec.dnsPolicy")},
		{"dnsPolicy None without nameservers", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone }, want(errRequired, "spec.dnsConfig.nameservers")},
		{"dnsPolicy None without dnsConfig", func(p *v1.Pod) {
			p.Spec.DNSPolicy = v1.DNSNone
			p.Spec.DNSConfig = nil
		}, want(errRequired, "spec.dnsConfig")},
		{"too many nameservers", func(p *v1.Pod) { p.Spec.DNSConfig.Nameservers = []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"} },
			want(invalid, "spec.dnsConfig.nameservers")},
		{"nameserver not an IP", func(p *v1.Pod) { p.Spec.DNSConfig.Nameservers = []string{"dns.local"} },
			want(invalid, "spec.dnsConfig.nameservers[0]")},
		{"search not a domain", func(p *v1.Pod) { p.Spec.DNSConfig.Searches = []string{"bad domain"} },
			want(invalid, "spec.dnsConfig.searches[0]")},
		{"dns option without a name", func(p *v1.Pod) { p.Spec.DNSConfig.Options[0].Name = "" }, want(errRequired, "spec.dnsConfig.options[0]")},
		{"terminationGracePeriodSeconds missing", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil },
			want(errRequired, "spec.terminationGracePeriodSeconds")},
		{"activeDeadlineSeconds zero", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(0)) }, want(invalid, "spec.activeDeadlineSeconds")},
		{"hostname not a DNS label", func(p *v1.Pod) { p.Spec.Hostname = "web.local" }, want(invalid, "spec.hostname")},
		{"nodeName not a DNS subdomain", func(p *v1.Pod) { p.Spec.NodeName = "Node_1" }, want(invalid, "spec.nodeName")},
		{"ephemeral containers on create", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox:1", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile,
			}}}
		}, want(forbidden, "spec.ephemeralContainers")},
		{"ephemeral container with ports", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox:1", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile,
				Ports: []v1.ContainerPort{{ContainerPort: 1, Protocol: v1.ProtocolTCP}},
			}}}
		}, want(forbidden, "spec.ephemeralContainers", forbidden, "spec.ephemeralContainers[0].ports")},
		{"toleration operator unknown", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: "Like"}} },
			want(notSupported, "spec.tolerations[0].operator")},
		{"os unknown", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: "plan9"} }, want(notSupported, "spec.os")},
		{"windows pod with runAsUser", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} },
			want(forbidden, "spec.securityContext.runAsUser", forbidden, "spec.securityContext.sysctls")},
		{"node name set while scheduling gates remain", func(p *v1.Pod) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
		}, want(forbidden, "spec.nodeName")},

		// probes and hooks
		{"probe without a handler", func(p *v1.Pod) { c0(p).LivenessProbe.HTTPGet = nil }, want(errRequired, "spec.containers[0].livenessProbe")},
		{"probe with two handlers", func(p *v1.Pod) { c0(p).LivenessProbe.Exec = &v1.ExecAction{Command: []string{"true"}} },
			want(forbidden, "spec.containers[0].livenessProbe.httpGet")},
		{"liveness successThreshold above one", func(p *v1.Pod) { c0(p).LivenessProbe.SuccessThreshold = 2 },
			want(invalid, "spec.containers[0].livenessProbe.successThreshold")},
		{"startup successThreshold above one", func(p *v1.Pod) {
			c0(p).StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 2, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1}
		}, want(invalid, "spec.containers[0].startupProbe.successThreshold")},
		{"negative failureThreshold", func(p *v1.Pod) { c0(p).LivenessProbe.FailureThreshold = -1 },
			want(invalid, "spec.containers[0].livenessProbe.failureThreshold")},
		{"readiness probe with a grace period", func(p *v1.Pod) {
			p.Spec.InitContainers[1].ReadinessProbe.TerminationGracePeriodSeconds = ptrTo(int64(5))
		}, want(invalid, "spec.initContainers[1].readinessProbe.terminationGracePeriodSeconds")},
		{"probe port name invalid", func(p *v1.Pod) { c0(p).LivenessProbe.HTTPGet.Port = intstr.FromString("HTTP_PORT") },
			want(invalid, "spec.containers[0].livenessProbe.httpGet.port", invalid, "spec.containers[0].livenessProbe.httpGet.port")},
		{"httpGet scheme unknown", func(p *v1.Pod) { c0(p).LivenessProbe.HTTPGet.Scheme = "FTP" },
			want(notSupported, "spec.containers[0].livenessProbe.httpGet.scheme")},
		{"exec without a command", func(p *v1.Pod) {
			c0(p).LivenessProbe.ProbeHandler = v1.ProbeHandler{Exec: &v1.ExecAction{}}
		}, want(errRequired, "spec.containers[0].livenessProbe.exec.command")},
		{"probe on a plain init container", func(p *v1.Pod) {
			p.Spec.InitContainers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}, want(forbidden, "spec.initContainers[0].livenessProbe")},
		{"lifecycle on a plain init container", func(p *v1.Pod) {
			p.Spec.InitContainers[0].Lifecycle = &v1.Lifecycle{}
		}, want(forbidden, "spec.initContainers[0].lifecycle")},
		{"hook without a handler", func(p *v1.Pod) { c0(p).Lifecycle.PreStop = &v1.LifecycleHandler{} },
			want(errRequired, "spec.containers[0].lifecycle.preStop")},
		{"sleep longer than the grace period", func(p *v1.Pod) { c0(p).Lifecycle.PreStop.Sleep.Seconds = 31 },
			want(invalid, "spec.containers[0].lifecycle.preStop.sleep")},

		// container restart policy
		{"container restartPolicy unknown", func(p *v1.Pod) { c0(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicy("Sometimes")) },
			want(notSupported, "spec.containers[0].restartPolicy")},
		{"init restartPolicy unknown", func(p *v1.Pod) { p.Spec.InitContainers[0].RestartPolicy = ptrTo(v1.ContainerRestartPolicy("Twice")) },
			want(notSupported, "spec.initContainers[0].restartPolicy")},
		{"restart rules without a container policy", func(p *v1.Pod) {
			c0(p).RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}
		}, want(errRequired, "spec.containers[0].restartPolicy")},
		{"restart rule action unknown, no exit codes", func(p *v1.Pod) {
			c0(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicyNever)
			c0(p).RestartPolicyRules = []v1.ContainerRestartRule{{Action: "Ignore"}}
		}, want(notSupported, "spec.containers[0].restartPolicyRules[0].action", errRequired, "spec.containers[0].restartPolicyRules[0].exitCodes")},
		{"restart rule operator unknown and duplicate value", func(p *v1.Pod) {
			c0(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicyNever)
			c0(p).RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: "Between", Values: []int32{1, 1}}}}
		}, want(notSupported, "spec.containers[0].restartPolicyRules[0].exitCodes.operator", duplicate, "spec.containers[0].restartPolicyRules[0].exitCodes.values[1]")},
		{"too many restart rules", func(p *v1.Pod) {
			c0(p).RestartPolicy = ptrTo(v1.ContainerRestartPolicyNever)
			rule := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}
			for range 21 {
				c0(p).RestartPolicyRules = append(c0(p).RestartPolicyRules, rule)
			}
		}, want(tooMany, "spec.containers[0].restartPolicyRules")},
		{"restart rules on a sidecar", func(p *v1.Pod) {
			p.Spec.InitContainers[1].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}
		}, want(forbidden, "spec.initContainers[1].restartPolicyRules")},
		{"resize policy must not restart a never-restarting pod", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			c0(p).ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
		}, want(invalid, "spec.containers[0].resizePolicy")},

		// security
		{"pod runAsUser negative", func(p *v1.Pod) { p.Spec.SecurityContext.RunAsUser = ptrTo(int64(-1)) },
			want(invalid, "spec.securityContext.runAsUser")},
		{"pod runAsGroup negative", func(p *v1.Pod) { p.Spec.SecurityContext.RunAsGroup = ptrTo(int64(-1)) },
			want(invalid, "spec.securityContext.runAsGroup")},
		{"container runAsGroup negative", func(p *v1.Pod) { c0(p).SecurityContext = &v1.SecurityContext{RunAsGroup: ptrTo(int64(-5))} },
			want(invalid, "spec.containers[0].securityContext.runAsGroup")},
		{"sysctl name invalid", func(p *v1.Pod) { p.Spec.SecurityContext.Sysctls[0].Name = "Kernel.SHM" },
			want(invalid, "spec.securityContext.sysctls[0].name")},
		{"sysctl repeated", func(p *v1.Pod) {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, p.Spec.SecurityContext.Sysctls[0])
		}, want(duplicate, "spec.securityContext.sysctls[1].name")},
		{"net sysctl with host network", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports[0].HostPort = 80
			p.Spec.SecurityContext.Sysctls[0].Name = "net/ipv4/ip_local_port_range"
		}, want(invalid, "spec.securityContext.sysctls[0].name")},
		{"ipc sysctl with host IPC", func(p *v1.Pod) { p.Spec.HostIPC = true }, want(invalid, "spec.securityContext.sysctls[0].name")},
		// kernel.shm and kernel.msg are in upstream's IPC table too.
		{"kernel.msg with host IPC", func(p *v1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext.Sysctls[0].Name = "kernel.msg"
		}, want(invalid, "spec.securityContext.sysctls[0].name")},
		{"fs.mqueue with host IPC", func(p *v1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext.Sysctls[0].Name = "fs/mqueue/msg_max"
		}, want(invalid, "spec.securityContext.sysctls[0].name")},
		{"unmasked proc mount with host users", func(p *v1.Pod) { c0(p).SecurityContext = &v1.SecurityContext{ProcMount: ptrTo(v1.UnmaskedProcMount)} },
			want(invalid, "spec.containers[0].securityContext.procMount")},
		{"localhost seccomp without a profile", func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}
		}, want(errRequired, "spec.securityContext.seccompProfile.localhostProfile")},
		{"no privilege escalation but privileged", func(p *v1.Pod) {
			c0(p).SecurityContext = &v1.SecurityContext{Privileged: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false)}
		}, want(invalid, "spec.containers[0].securityContext")},
		{"own user namespace with host PID", func(p *v1.Pod) {
			p.Spec.HostUsers = ptrTo(false)
			p.Spec.HostPID = true
		}, want(forbidden, "spec.hostPID")},
		{"process namespace sharing with host PID", func(p *v1.Pod) {
			p.Spec.HostPID = true
			p.Spec.ShareProcessNamespace = ptrTo(true)
		}, want(invalid, "spec.securityContext.shareProcessNamespace")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			got := errKeys(Validate(pod))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate() errors:\n  got  %s\n  want %s", strings.Join(got, "; "), strings.Join(tt.want, "; "))
			}
		})
	}
}

func TestValidateUndefaultedPodNamesEveryMissingDefault(t *testing.T) {
	pod := rawPod()
	got := errKeys(Validate(pod))
	wantKeys := want(
		errRequired, "spec.terminationGracePeriodSeconds",
		errRequired, "spec.restartPolicy",
		errRequired, "spec.dnsPolicy",
		errRequired, "spec.containers[0].imagePullPolicy",
		errRequired, "spec.containers[0].terminationMessagePolicy",
		errRequired, "spec.containers[0].ports[0].protocol",
		errRequired, "spec.containers[0].env[0].valueFrom.fieldRef.apiVersion",
		notSupported, "spec.containers[0].livenessProbe.httpGet.scheme",
		invalid, "spec.containers[0].livenessProbe.successThreshold",
		errRequired, "spec.containers[0].livenessProbe.httpGet.path",
		errRequired, "spec.initContainers[0].imagePullPolicy",
		errRequired, "spec.initContainers[0].terminationMessagePolicy",
		errRequired, "spec.initContainers[1].imagePullPolicy",
		errRequired, "spec.initContainers[1].terminationMessagePolicy",
	)
	if !slices.Equal(got, wantKeys) {
		t.Errorf("Validate(undefaulted) errors:\n  got  %s\n  want %s", strings.Join(got, "; "), strings.Join(wantKeys, "; "))
	}
}

func TestValidateDoesNotMutate(t *testing.T) {
	pod := validPod()
	pod.Spec.Containers[0].Name = "" // make it produce errors too
	before := pod.DeepCopy()
	_ = Validate(pod)
	if !apiequality.Semantic.DeepEqual(before, pod) {
		t.Errorf("Validate modified its input")
	}
}

func TestValidateNilPod(t *testing.T) {
	if errs := Validate(nil); len(errs) != 1 || errs[0].Type != field.ErrorTypeRequired {
		t.Errorf("Validate(nil) = %v, want one Required error", errs)
	}
}
