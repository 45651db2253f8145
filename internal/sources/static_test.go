package sources

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

var testNow = time.Date(2024, 3, 4, 5, 6, 7, 8, time.UTC)

func fileOrigin(path string) staticOrigin {
	return staticOrigin{NodeName: "node-1", Source: FileSource, Location: path, Now: testNow}
}

func TestPrepareStaticPodIdentity(t *testing.T) {
	seconds := int64(300)
	tests := []struct {
		name   string
		pod    *v1.Pod
		origin staticOrigin
		check  func(t *testing.T, p *v1.Pod)
	}{
		{
			name:   "file pod gets name, namespace, node, annotations, toleration and phase",
			pod:    &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}},
			origin: fileOrigin("/etc/kubernetes/manifests/web.yaml"),
			check: func(t *testing.T, p *v1.Pod) {
				if p.Name != "web-node-1" || p.Namespace != "default" || p.Spec.NodeName != "node-1" {
					t.Errorf("identity = %s/%s on %q, want default/web-node-1 on node-1", p.Namespace, p.Name, p.Spec.NodeName)
				}
				if p.UID == "" || p.Annotations[podutil.ConfigHashAnnotationKey] != string(p.UID) {
					t.Errorf("UID %q and hash annotation %q must be set and equal", p.UID, p.Annotations[podutil.ConfigHashAnnotationKey])
				}
				if p.Annotations[podutil.ConfigSourceAnnotationKey] != FileSource {
					t.Errorf("source annotation = %q", p.Annotations[podutil.ConfigSourceAnnotationKey])
				}
				if p.Annotations[podutil.ConfigFirstSeenAnnotationKey] != testNow.Format(time.RFC3339Nano) {
					t.Errorf("seen annotation = %q", p.Annotations[podutil.ConfigFirstSeenAnnotationKey])
				}
				want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
				if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0] != want {
					t.Errorf("tolerations = %v, want [%v]", p.Spec.Tolerations, want)
				}
				if p.Status.Phase != v1.PodPending {
					t.Errorf("phase = %q, want Pending", p.Status.Phase)
				}
			},
		},
		{
			name: "explicit namespace, UID and annotations are kept",
			pod: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "kube-system", UID: "fixed", Annotations: map[string]string{"keep": "me"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}},
			},
			origin: fileOrigin("/m/web.yaml"),
			check: func(t *testing.T, p *v1.Pod) {
				if p.Namespace != "kube-system" || p.UID != "fixed" || p.Annotations["keep"] != "me" || p.Annotations[podutil.ConfigHashAnnotationKey] != "fixed" {
					t.Errorf("got %s/%s uid %q annotations %v", p.Namespace, p.Name, p.UID, p.Annotations)
				}
			},
		},
		{
			name: "a matching toleration is replaced, others kept",
			pod: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: v1.PodSpec{
					Containers: []v1.Container{{Name: "c", Image: "nginx"}},
					Tolerations: []v1.Toleration{
						{Key: "k", Operator: v1.TolerationOpEqual, Value: "v", Effect: v1.TaintEffectNoSchedule},
						{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &seconds},
					},
				},
			},
			origin: fileOrigin("/m/web.yaml"),
			check: func(t *testing.T, p *v1.Pod) {
				if len(p.Spec.Tolerations) != 2 || p.Spec.Tolerations[0].Key != "k" || p.Spec.Tolerations[1].TolerationSeconds != nil {
					t.Errorf("tolerations = %+v", p.Spec.Tolerations)
				}
			},
		},
		{
			name:   "http pod gets no toleration and the http source",
			pod:    &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}},
			origin: staticOrigin{NodeName: "n", Source: HTTPSource, Location: "http://127.0.0.1/pods", Now: testNow},
			check: func(t *testing.T, p *v1.Pod) {
				if len(p.Spec.Tolerations) != 0 || p.Annotations[podutil.ConfigSourceAnnotationKey] != HTTPSource {
					t.Errorf("tolerations %v, source %q", p.Spec.Tolerations, p.Annotations[podutil.ConfigSourceAnnotationKey])
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := prepareStaticPod(tc.pod, tc.origin); err != nil {
				t.Fatalf("prepareStaticPod: %v", err)
			}
			tc.check(t, tc.pod)
		})
	}
}

func TestPrepareStaticPodRejects(t *testing.T) {
	tests := []struct {
		name    string
		pod     *v1.Pod
		wantErr string
	}{
		{name: "missing name", pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}}, wantErr: "metadata.name: Required value"},
		{
			name:    "validation errors are reported with their field paths",
			pod:     &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
			wantErr: "spec.containers[0].image",
		},
		{
			name: "API object references are refused",
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{
				Containers: []v1.Container{{Name: "c", Image: "nginx", VolumeMounts: []v1.VolumeMount{{Name: "v", MountPath: "/s"}}}},
				Volumes:    []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}},
			}},
			wantErr: "static pods may not reference secrets",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := prepareStaticPod(tc.pod, fileOrigin("/m/web.yaml"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestStaticPodName(t *testing.T) {
	if got := StaticPodName("web", "Node-1.Example"); got != "web-node-1.example" {
		t.Errorf("StaticPodName = %q, want web-node-1.example", got)
	}
}

func TestAPIObjectReference(t *testing.T) {
	base := func(mutate func(*v1.PodSpec)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}}
		mutate(&p.Spec)
		return p
	}
	vol := func(src v1.VolumeSource) func(*v1.PodSpec) {
		return func(s *v1.PodSpec) { s.Volumes = []v1.Volume{{Name: "v", VolumeSource: src}} }
	}
	projected := func(p v1.VolumeProjection) func(*v1.PodSpec) {
		return vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{p}}})
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want string // "" means no reference; else a prefix of the answer
		// local: a local ConfigMap or Secret, allowed in standalone mode.
		local bool
		// localWant, when set, is the answer in standalone mode.
		localWant string
	}{
		{name: "plain pod", pod: base(func(*v1.PodSpec) {})},
		{name: "service account", pod: base(func(s *v1.PodSpec) { s.ServiceAccountName = "sa" }), want: "serviceaccounts"},
		{name: "deprecated service account", pod: base(func(s *v1.PodSpec) { s.DeprecatedServiceAccount = "sa" }), want: "serviceaccounts"},
		{name: "image pull secret", pod: base(func(s *v1.PodSpec) { s.ImagePullSecrets = []v1.LocalObjectReference{{Name: "s"}} }), want: "secrets", local: true},
		{
			name: "secret env",
			pod: base(func(s *v1.PodSpec) {
				s.Containers[0].Env = []v1.EnvVar{{Name: "E", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k", LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}}}
			}),
			want: "secrets", local: true,
		},
		{
			name: "configmap env in an ephemeral container",
			pod: base(func(s *v1.PodSpec) {
				s.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e", Env: []v1.EnvVar{
					{Name: "E", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k", LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}},
				}}}}
			}),
			want: "configmaps", local: true,
		},
		{
			name: "configmap envFrom in an init container",
			pod: base(func(s *v1.PodSpec) {
				s.InitContainers = []v1.Container{{Name: "i", Image: "busybox", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}}}
			}),
			want: "configmaps", local: true,
		},
		{
			name: "field ref env is fine",
			pod: base(func(s *v1.PodSpec) {
				s.Containers[0].Env = []v1.EnvVar{{Name: "E", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			}),
		},
		{name: "resource claims", pod: base(func(s *v1.PodSpec) { s.ResourceClaims = []v1.PodResourceClaim{{Name: "r"}} }), want: "resourceclaims"},
		{name: "secret volume", pod: base(vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}})), want: "secrets", local: true},
		{name: "configmap volume", pod: base(vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}})), want: "configmaps", local: true},
		{name: "azure file volume", pod: base(vol(v1.VolumeSource{AzureFile: &v1.AzureFileVolumeSource{SecretName: "s"}})), want: "secrets"},
		{name: "rbd volume with a secret", pod: base(vol(v1.VolumeSource{RBD: &v1.RBDVolumeSource{SecretRef: &v1.LocalObjectReference{Name: "s"}}})), want: "secrets"},
		{name: "rbd volume without a secret is fine", pod: base(vol(v1.VolumeSource{RBD: &v1.RBDVolumeSource{CephMonitors: []string{"m"}}}))},
		{name: "pvc volume", pod: base(vol(v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}})), want: "persistentvolumeclaims"},
		{name: "ephemeral volume", pod: base(vol(v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}})), want: "persistentvolumeclaims"},
		{name: "csi volume", pod: base(vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d"}})), want: "csidrivers"},
		{name: "glusterfs volume", pod: base(vol(v1.VolumeSource{Glusterfs: &v1.GlusterfsVolumeSource{EndpointsName: "e"}})), want: "endpoints"},
		{name: "projected secret", pod: base(projected(v1.VolumeProjection{Secret: &v1.SecretProjection{}})), want: "secrets", local: true},
		{name: "projected configmap", pod: base(projected(v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{}})), want: "configmaps", local: true},
		{name: "projected service account token", pod: base(projected(v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}})), want: "serviceaccounts"},
		{name: "projected configmap beside a service account token", pod: base(vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{}}, {ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}},
		}}})), want: "configmaps", localWant: "serviceaccounts"},
		{name: "projected cluster trust bundle", pod: base(projected(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}})), want: "clustertrustbundles"},
		{name: "projected pod certificate", pod: base(projected(v1.VolumeProjection{PodCertificate: &v1.PodCertificateProjection{}})), want: "podcertificates"},
		{name: "projected downward API is fine", pod: base(projected(v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{}}))},
		{name: "host path volume is fine", pod: base(vol(v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc"}}))},
		{name: "empty dir volume is fine", pod: base(vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := apiObjectReference(tc.pod, false)
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("cluster mode: apiObjectReference = %q, want %q", got, tc.want)
			}
			want := tc.want
			if tc.local {
				want = ""
			}
			if tc.localWant != "" {
				want = tc.localWant
			}
			got = apiObjectReference(tc.pod, true)
			if (want == "") != (got == "") || !strings.HasPrefix(got, want) {
				t.Errorf("standalone mode: apiObjectReference = %q, want %q", got, want)
			}
		})
	}
}

func TestStaticPodUIDIsStableAndDistinct(t *testing.T) {
	uidOf := func(t *testing.T, data string, o staticOrigin) string {
		t.Helper()
		pods, err := parseStaticPods([]byte(data), o)
		if err != nil || len(pods) != 1 {
			t.Fatalf("parseStaticPods = %v, %v", pods, err)
		}
		return string(pods[0].UID)
	}
	first := uidOf(t, podA, fileOrigin("/m/a.yaml"))
	later := fileOrigin("/m/a.yaml")
	later.Now = testNow.Add(time.Hour) // a restart later
	tests := []struct {
		name     string
		data     string
		origin   staticOrigin
		wantSame bool
	}{
		{name: "same manifest, same path, read again later", data: podA, origin: later, wantSame: true},
		{name: "same manifest at another path", data: podA, origin: fileOrigin("/m/copy.yaml")},
		{name: "same manifest on another node", data: podA, origin: staticOrigin{NodeName: "other", Source: FileSource, Location: "/m/a.yaml", Now: testNow}},
		{name: "same manifest from a URL", data: podA, origin: staticOrigin{NodeName: "node-1", Source: HTTPSource, Location: "/m/a.yaml", Now: testNow}},
		{name: "edited manifest", data: strings.Replace(podA, "busybox", "nginx", 1), origin: fileOrigin("/m/a.yaml")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := uidOf(t, tc.data, tc.origin)
			if (got == first) != tc.wantSame {
				t.Errorf("UID %q vs first %q: same=%v, want same=%v", got, first, got == first, tc.wantSame)
			}
		})
	}
}

func TestParseStaticPodsIsAllOrNothing(t *testing.T) {
	data := podA + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec: {containers: [{name: c}]}\n"
	pods, err := parseStaticPods([]byte(data), fileOrigin("/m/two.yaml"))
	if err == nil || !strings.Contains(err.Error(), `pod "broken"`) || pods != nil {
		t.Fatalf("got %v, %v; want no pods and an error naming pod \"broken\"", pods, err)
	}
}
