package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func podWith(containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       v1.PodSpec{Containers: containers},
	}
}

func TestSetDefaultsMinimalPod(t *testing.T) {
	pod := podWith(v1.Container{Name: "c", Image: "busybox"})
	SetDefaults(pod)

	want := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name:                     "c",
				Image:                    "busybox",
				ImagePullPolicy:          v1.PullAlways,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile,
			}},
			RestartPolicy:                 v1.RestartPolicyAlways,
			DNSPolicy:                     v1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptrTo(int64(30)),
			SchedulerName:                 "default-scheduler",
			SecurityContext:               &v1.PodSecurityContext{},
			EnableServiceLinks:            ptrTo(true),
		},
	}
	if !apiequality.Semantic.DeepEqual(pod, want) {
		t.Errorf("SetDefaults(minimal pod) =\n%#v\nwant\n%#v", pod.Spec, want.Spec)
	}
}

func TestSetDefaultsImagePullPolicy(t *testing.T) {
	tests := []struct {
		name     string
		image    string
		explicit v1.PullPolicy
		want     v1.PullPolicy
	}{
		{"busybox", "busybox", "", v1.PullAlways},
		{"busybox:latest", "busybox:latest", "", v1.PullAlways},
		{"busybox:1.36", "busybox:1.36", "", v1.PullIfNotPresent},
		{"busybox@sha256", "busybox@sha256:" + sha256Hex, "", v1.PullIfNotPresent},
		{"localhost:5000/img", "localhost:5000/img", "", v1.PullAlways},
		{"localhost:5000/img:1", "localhost:5000/img:1", "", v1.PullIfNotPresent},
		{"explicit policy is kept", "busybox", v1.PullNever, v1.PullNever},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podWith(v1.Container{Name: "c", Image: tt.image, ImagePullPolicy: tt.explicit})
			pod.Spec.InitContainers = []v1.Container{{Name: "i", Image: tt.image, ImagePullPolicy: tt.explicit}}
			pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", Image: tt.image, ImagePullPolicy: tt.explicit}}}
			pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: tt.image, PullPolicy: tt.explicit}}}}
			SetDefaults(pod)
			got := map[string]v1.PullPolicy{
				"container":      pod.Spec.Containers[0].ImagePullPolicy,
				"init container": pod.Spec.InitContainers[0].ImagePullPolicy,
				"ephemeral":      pod.Spec.EphemeralContainers[0].ImagePullPolicy,
				"image volume":   pod.Spec.Volumes[0].Image.PullPolicy,
			}
			for where, policy := range got {
				if policy != tt.want {
					t.Errorf("%s imagePullPolicy = %q, want %q", where, policy, tt.want)
				}
			}
		})
	}
}

func TestSetDefaultsKeepsExplicitValues(t *testing.T) {
	pod := podWith(v1.Container{
		Name: "c", Image: "busybox", TerminationMessagePath: "/tmp/msg",
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		Ports:                    []v1.ContainerPort{{ContainerPort: 53, Protocol: v1.ProtocolUDP}},
	})
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.DNSPolicy = v1.DNSDefault
	pod.Spec.TerminationGracePeriodSeconds = ptrTo(int64(5))
	pod.Spec.SchedulerName = "mine"
	pod.Spec.EnableServiceLinks = ptrTo(false)
	SetDefaults(pod)

	c := pod.Spec.Containers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"terminationMessagePath", c.TerminationMessagePath, "/tmp/msg"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, v1.TerminationMessageFallbackToLogsOnError},
		{"port protocol", c.Ports[0].Protocol, v1.ProtocolUDP},
		{"restartPolicy", pod.Spec.RestartPolicy, v1.RestartPolicyNever},
		{"dnsPolicy", pod.Spec.DNSPolicy, v1.DNSDefault},
		{"terminationGracePeriodSeconds", *pod.Spec.TerminationGracePeriodSeconds, int64(5)},
		{"schedulerName", pod.Spec.SchedulerName, "mine"},
		{"enableServiceLinks", *pod.Spec.EnableServiceLinks, false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestSetDefaultsPorts(t *testing.T) {
	tests := []struct {
		name         string
		hostNetwork  bool
		port         v1.ContainerPort
		wantHostPort int32
		wantProtocol v1.Protocol
	}{
		{"protocol defaults to TCP", false, v1.ContainerPort{ContainerPort: 80}, 0, v1.ProtocolTCP},
		{"host network copies the container port", true, v1.ContainerPort{ContainerPort: 80}, 80, v1.ProtocolTCP},
		{"host network keeps an explicit host port", true, v1.ContainerPort{ContainerPort: 80, HostPort: 81}, 81, v1.ProtocolTCP},
		{"no host network leaves host port unset", false, v1.ContainerPort{ContainerPort: 80, Protocol: v1.ProtocolSCTP}, 0, v1.ProtocolSCTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podWith(v1.Container{Name: "c", Image: "i:1", Ports: []v1.ContainerPort{tt.port}})
			pod.Spec.InitContainers = []v1.Container{{Name: "i", Image: "i:1", Ports: []v1.ContainerPort{tt.port}}}
			pod.Spec.HostNetwork = tt.hostNetwork
			SetDefaults(pod)
			for _, c := range []v1.Container{pod.Spec.Containers[0], pod.Spec.InitContainers[0]} {
				if p := c.Ports[0]; p.HostPort != tt.wantHostPort || p.Protocol != tt.wantProtocol {
					t.Errorf("%s port = %+v, want hostPort %d protocol %s", c.Name, p, tt.wantHostPort, tt.wantProtocol)
				}
			}
		})
	}
}

func TestSetDefaultsProbes(t *testing.T) {
	pod := podWith(v1.Container{
		Name: "c", Image: "i:1",
		LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000}}},
		StartupProbe:   &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 3, FailureThreshold: 30},
		Lifecycle: &v1.Lifecycle{
			PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80), Path: "/start", Scheme: v1.URISchemeHTTPS}},
			PreStop:   &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}},
		},
	})
	SetDefaults(pod)
	c := pod.Spec.Containers[0]

	wantTimings := []struct {
		name                              string
		probe                             *v1.Probe
		timeout, period, success, failure int32
	}{
		{"liveness gets every default", c.LivenessProbe, 1, 10, 1, 3},
		{"readiness gets every default", c.ReadinessProbe, 1, 10, 1, 3},
		{"startup keeps explicit period and threshold", c.StartupProbe, 1, 3, 1, 30},
	}
	for _, w := range wantTimings {
		p := w.probe
		if p.TimeoutSeconds != w.timeout || p.PeriodSeconds != w.period || p.SuccessThreshold != w.success || p.FailureThreshold != w.failure {
			t.Errorf("%s: got timeout=%d period=%d success=%d failure=%d", w.name, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
		}
	}
	if h := c.LivenessProbe.HTTPGet; h.Path != "/" || h.Scheme != v1.URISchemeHTTP {
		t.Errorf("liveness httpGet = %+v, want path / and scheme HTTP", h)
	}
	if s := c.ReadinessProbe.GRPC.Service; s == nil || *s != "" {
		t.Errorf("grpc service = %v, want pointer to empty string", s)
	}
	if h := c.Lifecycle.PostStart.HTTPGet; h.Path != "/start" || h.Scheme != v1.URISchemeHTTPS {
		t.Errorf("postStart httpGet = %+v, explicit values must be kept", h)
	}
	if h := c.Lifecycle.PreStop.HTTPGet; h.Path != "/" || h.Scheme != v1.URISchemeHTTP {
		t.Errorf("preStop httpGet = %+v, want path / and scheme HTTP", h)
	}
}

func TestSetDefaultsEnv(t *testing.T) {
	pod := podWith(v1.Container{Name: "c", Image: "i:1", Env: []v1.EnvVar{
		{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "FROM_FILE", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "env", Key: "K"}}},
		{Name: "PLAIN", Value: "x"},
	}})
	SetDefaults(pod)
	env := pod.Spec.Containers[0].Env
	if got := env[0].ValueFrom.FieldRef.APIVersion; got != "v1" {
		t.Errorf("fieldRef apiVersion = %q, want v1", got)
	}
	if got := env[1].ValueFrom.FileKeyRef.Optional; got == nil || *got {
		t.Errorf("fileKeyRef optional = %v, want false", got)
	}
	if env[2].ValueFrom != nil {
		t.Errorf("plain env var gained a valueFrom: %+v", env[2].ValueFrom)
	}
}

func TestSetDefaultsVolumes(t *testing.T) {
	mode := ptrTo(int32(0644))
	tests := []struct {
		name  string
		in    v1.VolumeSource
		check func(t *testing.T, got v1.VolumeSource)
	}{
		{"no source becomes emptyDir", v1.VolumeSource{}, func(t *testing.T, got v1.VolumeSource) {
			if got.EmptyDir == nil {
				t.Errorf("want emptyDir, got %+v", got)
			}
		}},
		{"hostPath type defaults to empty", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}, func(t *testing.T, got v1.VolumeSource) {
			if got.HostPath.Type == nil || *got.HostPath.Type != v1.HostPathUnset {
				t.Errorf("hostPath type = %v, want \"\"", got.HostPath.Type)
			}
		}},
		{"secret defaultMode 0644", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}, func(t *testing.T, got v1.VolumeSource) {
			if !apiequality.Semantic.DeepEqual(got.Secret.DefaultMode, mode) {
				t.Errorf("secret defaultMode = %v", got.Secret.DefaultMode)
			}
		}},
		{"configMap defaultMode 0644", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}, func(t *testing.T, got v1.VolumeSource) {
			if !apiequality.Semantic.DeepEqual(got.ConfigMap.DefaultMode, mode) {
				t.Errorf("configMap defaultMode = %v", got.ConfigMap.DefaultMode)
			}
		}},
		{"explicit defaultMode kept", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultMode: ptrTo(int32(0400))}}, func(t *testing.T, got v1.VolumeSource) {
			if *got.ConfigMap.DefaultMode != 0400 {
				t.Errorf("configMap defaultMode = %o, want 0400", *got.ConfigMap.DefaultMode)
			}
		}},
		{"downwardAPI defaultMode and item apiVersion", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}, func(t *testing.T, got v1.VolumeSource) {
			if !apiequality.Semantic.DeepEqual(got.DownwardAPI.DefaultMode, mode) || got.DownwardAPI.Items[0].FieldRef.APIVersion != "v1" {
				t.Errorf("downwardAPI = %+v", got.DownwardAPI)
			}
		}},
		{"projected defaultMode, token expiry and item apiVersion", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}, func(t *testing.T, got v1.VolumeSource) {
			p := got.Projected
			if !apiequality.Semantic.DeepEqual(p.DefaultMode, mode) {
				t.Errorf("projected defaultMode = %v", p.DefaultMode)
			}
			if e := p.Sources[0].ServiceAccountToken.ExpirationSeconds; e == nil || *e != 3600 {
				t.Errorf("token expirationSeconds = %v, want 3600", e)
			}
			if v := p.Sources[1].DownwardAPI.Items[0].FieldRef.APIVersion; v != "v1" {
				t.Errorf("projected downward apiVersion = %q", v)
			}
		}},
		{"iscsi interface", v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{}}, func(t *testing.T, got v1.VolumeSource) {
			if got.ISCSI.ISCSIInterface != "default" {
				t.Errorf("iscsiInterface = %q", got.ISCSI.ISCSIInterface)
			}
		}},
		{"rbd pool, user and keyring", v1.VolumeSource{RBD: &v1.RBDVolumeSource{}}, func(t *testing.T, got v1.VolumeSource) {
			if r := got.RBD; r.RBDPool != "rbd" || r.RadosUser != "admin" || r.Keyring != "/etc/ceph/keyring" {
				t.Errorf("rbd = %+v", r)
			}
		}},
		{"azureDisk caching, fsType, readOnly, kind", v1.VolumeSource{AzureDisk: &v1.AzureDiskVolumeSource{}}, func(t *testing.T, got v1.VolumeSource) {
			a := got.AzureDisk
			if *a.CachingMode != v1.AzureDataDiskCachingReadWrite || *a.FSType != "ext4" || *a.ReadOnly || *a.Kind != v1.AzureSharedBlobDisk {
				t.Errorf("azureDisk = %+v", a)
			}
		}},
		{"scaleIO storage mode and fsType", v1.VolumeSource{ScaleIO: &v1.ScaleIOVolumeSource{}}, func(t *testing.T, got v1.VolumeSource) {
			if s := got.ScaleIO; s.StorageMode != "ThinProvisioned" || s.FSType != "xfs" {
				t.Errorf("scaleIO = %+v", s)
			}
		}},
		{"ephemeral claim volumeMode", v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}, func(t *testing.T, got v1.VolumeSource) {
			if m := got.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode; m == nil || *m != v1.PersistentVolumeFilesystem {
				t.Errorf("volumeMode = %v", m)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podWith(v1.Container{Name: "c", Image: "i:1"})
			pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: tt.in}}
			SetDefaults(pod)
			tt.check(t, pod.Spec.Volumes[0].VolumeSource)
		})
	}
}

func resources(kv ...string) v1.ResourceList {
	list := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		list[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return list
}

func TestSetDefaultsContainerResources(t *testing.T) {
	tests := []struct {
		name         string
		in           v1.ResourceRequirements
		wantRequests v1.ResourceList
		wantLimits   v1.ResourceList
	}{
		{"requests copied from limits", v1.ResourceRequirements{Limits: resources("cpu", "1", "memory", "1Gi")},
			resources("cpu", "1", "memory", "1Gi"), resources("cpu", "1", "memory", "1Gi")},
		{"explicit request kept", v1.ResourceRequirements{Limits: resources("cpu", "1", "memory", "1Gi"), Requests: resources("cpu", "250m")},
			resources("cpu", "250m", "memory", "1Gi"), resources("cpu", "1", "memory", "1Gi")},
		{"no limits, no requests", v1.ResourceRequirements{}, nil, nil},
		{"quantities rounded up to milli", v1.ResourceRequirements{Requests: resources("cpu", "100u")},
			resources("cpu", "1m"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podWith(v1.Container{Name: "c", Image: "i:1", Resources: *tt.in.DeepCopy()})
			pod.Spec.InitContainers = []v1.Container{{Name: "i", Image: "i:1", Resources: *tt.in.DeepCopy()}}
			SetDefaults(pod)
			for _, c := range []v1.Container{pod.Spec.Containers[0], pod.Spec.InitContainers[0]} {
				if !apiequality.Semantic.DeepEqual(c.Resources.Requests, tt.wantRequests) {
					t.Errorf("%s requests = %v, want %v", c.Name, c.Resources.Requests, tt.wantRequests)
				}
				if !apiequality.Semantic.DeepEqual(c.Resources.Limits, tt.wantLimits) {
					t.Errorf("%s limits = %v, want %v", c.Name, c.Resources.Limits, tt.wantLimits)
				}
			}
		})
	}
}

func TestSetDefaultsPodLevelResources(t *testing.T) {
	always := ptrTo(v1.ContainerRestartPolicyAlways)
	tests := []struct {
		name         string
		pod          v1.ResourceRequirements
		containers   []v1.ResourceRequirements
		inits        []v1.Container
		wantRequests v1.ResourceList
		wantLimits   v1.ResourceList
	}{
		{
			name:         "pod requests from pod limits when containers request nothing",
			pod:          v1.ResourceRequirements{Limits: resources("cpu", "2", "memory", "1Gi")},
			containers:   []v1.ResourceRequirements{{}},
			wantRequests: resources("cpu", "2", "memory", "1Gi"),
			wantLimits:   resources("cpu", "2", "memory", "1Gi"),
		},
		{
			name:         "pod requests from aggregated container requests",
			pod:          v1.ResourceRequirements{Limits: resources("cpu", "4")},
			containers:   []v1.ResourceRequirements{{Requests: resources("cpu", "1")}, {Requests: resources("cpu", "500m")}},
			wantRequests: resources("cpu", "1500m"),
			wantLimits:   resources("cpu", "4"),
		},
		{
			name:       "init container peak counts with sidecars started before it",
			pod:        v1.ResourceRequirements{Limits: resources("cpu", "8")},
			containers: []v1.ResourceRequirements{{Requests: resources("cpu", "1")}},
			inits: []v1.Container{
				{Name: "sidecar", RestartPolicy: always, Resources: v1.ResourceRequirements{Requests: resources("cpu", "1")}},
				{Name: "big-init", Resources: v1.ResourceRequirements{Requests: resources("cpu", "3")}},
			},
			wantRequests: resources("cpu", "4"),
			wantLimits:   resources("cpu", "8"),
		},
		{
			name:         "pod limits from containers when every container has one",
			pod:          v1.ResourceRequirements{Requests: resources("cpu", "1")},
			containers:   []v1.ResourceRequirements{{Limits: resources("cpu", "1", "memory", "1Gi")}, {Limits: resources("cpu", "2")}},
			wantRequests: resources("cpu", "1"),
			wantLimits:   resources("cpu", "3"),
		},
		{
			name:         "huge-page limits from containers",
			pod:          v1.ResourceRequirements{Requests: resources("cpu", "1")},
			containers:   []v1.ResourceRequirements{{Limits: resources("hugepages-2Mi", "4Mi")}},
			wantRequests: resources("cpu", "1", "hugepages-2Mi", "4Mi"),
			wantLimits:   resources("hugepages-2Mi", "4Mi"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podWith()
			for i, r := range tt.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Image: "i:1", Resources: r})
			}
			pod.Spec.InitContainers = tt.inits
			pod.Spec.Resources = tt.pod.DeepCopy()
			SetDefaults(pod)
			if got := pod.Spec.Resources.Requests; !apiequality.Semantic.DeepEqual(got, tt.wantRequests) {
				t.Errorf("pod requests = %v, want %v", got, tt.wantRequests)
			}
			if got := pod.Spec.Resources.Limits; !apiequality.Semantic.DeepEqual(got, tt.wantLimits) {
				t.Errorf("pod limits = %v, want %v", got, tt.wantLimits)
			}
		})
	}
}

func TestSetDefaultsNoPodLevelResourcesStaysNil(t *testing.T) {
	pod := podWith(v1.Container{Name: "c", Image: "i:1", Resources: v1.ResourceRequirements{Limits: resources("cpu", "1")}})
	SetDefaults(pod)
	if pod.Spec.Resources != nil {
		t.Errorf("spec.resources = %+v, want nil when the pod sets none", pod.Spec.Resources)
	}
}

func TestSetDefaultsIdempotent(t *testing.T) {
	pod := richPod()
	SetDefaults(pod)
	once := pod.DeepCopy()
	SetDefaults(pod)
	if !apiequality.Semantic.DeepEqual(once, pod) {
		t.Errorf("second SetDefaults changed the pod:\nonce:  %#v\ntwice: %#v", once.Spec, pod.Spec)
	}
}

func TestSetDefaultsNilPod(t *testing.T) {
	SetDefaults(nil) // must not panic
}

// richPod touches every defaulted area at once.
func richPod() *v1.Pod {
	pod := podWith(v1.Container{
		Name: "c", Image: "busybox",
		Ports:          []v1.ContainerPort{{ContainerPort: 80}},
		Env:            []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources:      v1.ResourceRequirements{Limits: resources("cpu", "1", "memory", "64Mi")},
		LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 81}}},
		Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
	})
	pod.Spec.HostNetwork = true
	pod.Spec.InitContainers = []v1.Container{{Name: "i", Image: "busybox:1", Resources: v1.ResourceRequirements{Limits: resources("cpu", "1")}}}
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: resources("cpu", "2")}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "empty"},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}},
		}}}},
	}
	pod.Spec.Overhead = resources("cpu", "100u")
	return pod
}
