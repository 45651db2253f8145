package criconfig

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// envOf runs ContainerConfig and returns its env as ordered pairs.
func envOf(t *testing.T, in ContainerInputs, o Options) ([][2]string, error) {
	t.Helper()
	cfg, err := ContainerConfig(context.Background(), in, o)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, kv := range cfg.Envs {
		out = append(out, [2]string{kv.Key, string(kv.Value)})
	}
	return out, nil
}

func withEnv(env ...v1.EnvVar) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Env = env }
}

func fieldRef(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func TestEnvLiteralsAndExpansion(t *testing.T) {
	src := &fakeEnvSource{services: map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "DB_SERVICE_HOST": "10.96.0.9"}}
	tests := []struct {
		name string
		pod  *v1.Pod
		o    Options
		want [][2]string
	}{
		{
			name: "literals in declaration order",
			pod:  testPod(withEnv(v1.EnvVar{Name: "B", Value: "2"}, v1.EnvVar{Name: "A", Value: "1"}, v1.EnvVar{Name: "EMPTY"})),
			want: [][2]string{{"B", "2"}, {"A", "1"}, {"EMPTY", ""}},
		},
		{
			name: "later vars expand earlier ones, not later ones",
			pod: testPod(withEnv(
				v1.EnvVar{Name: "HOST", Value: "db"},
				v1.EnvVar{Name: "URL", Value: "pg://$(HOST):$(PORT)/$$(HOST)"},
				v1.EnvVar{Name: "PORT", Value: "5432"},
			)),
			want: [][2]string{{"HOST", "db"}, {"URL", "pg://db:$(PORT)/$(HOST)"}, {"PORT", "5432"}},
		},
		{
			name: "redefinition keeps first position with last value",
			pod:  testPod(withEnv(v1.EnvVar{Name: "A", Value: "1"}, v1.EnvVar{Name: "B", Value: "x"}, v1.EnvVar{Name: "A", Value: "$(A)2"})),
			want: [][2]string{{"A", "12"}, {"B", "x"}},
		},
		{
			name: "service variables expand and come last, sorted, never overriding",
			pod:  testPod(withEnv(v1.EnvVar{Name: "DB", Value: "$(DB_SERVICE_HOST)"}, v1.EnvVar{Name: "DB_SERVICE_HOST", Value: "mine"})),
			o:    Options{EnvSource: src},
			want: [][2]string{{"DB", "10.96.0.9"}, {"DB_SERVICE_HOST", "mine"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"}},
		},
		{
			name: "service links disabled keep only the master service",
			pod:  testPod(func(p *v1.Pod) { p.Spec.EnableServiceLinks = ptr(false) }),
			o:    Options{EnvSource: src},
			want: [][2]string{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := envOf(t, ContainerInputs{Pod: tc.pod, Container: &tc.pod.Spec.Containers[0]}, tc.o)
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEnvDownwardAPIFields(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "web", "tier": "front"}
		p.Annotations = map[string]string{"note": `say "hi"`}
		p.Spec.SchedulerName = "default-scheduler"
		p.Status.Phase = v1.PodRunning
	})
	tests := []struct {
		name    string
		path    string
		podIPs  []string
		hostIPs []string
		o       Options
		podMod  func(*v1.Pod)
		want    string
		wantErr bool
	}{
		{name: "name", path: "metadata.name", want: "web"},
		{name: "namespace", path: "metadata.namespace", want: "shop"},
		{name: "uid", path: "metadata.uid", want: "uid-1"},
		{name: "one label", path: "metadata.labels['tier']", want: "front"},
		{name: "missing label is empty", path: "metadata.labels['nope']", want: ""},
		{name: "one annotation", path: "metadata.annotations['note']", want: `say "hi"`},
		{name: "all labels", path: "metadata.labels", want: "app=\"web\"\ntier=\"front\""},
		{name: "node name", path: "spec.nodeName", want: "node-a"},
		{name: "node name falls back to the kubelet's", path: "spec.nodeName", podMod: func(p *v1.Pod) { p.Spec.NodeName = "" }, o: Options{NodeName: "node-z"}, want: "node-z"},
		{name: "service account", path: "spec.serviceAccountName", want: "default"},
		{name: "scheduler", path: "spec.schedulerName", want: "default-scheduler"},
		{name: "phase", path: "status.phase", want: "Running"},
		{name: "pod IP", path: "status.podIP", podIPs: []string{"10.244.0.7"}, want: "10.244.0.7"},
		{name: "pod IP before sandbox has one", path: "status.podIP", want: ""},
		{name: "pod IPs follow the node's family", path: "status.podIPs", podIPs: []string{"10.244.0.7", "fd00::7"}, hostIPs: []string{"fd00::1"}, want: "fd00::7,10.244.0.7"},
		{name: "pod IP of the preferred family", path: "status.podIP", podIPs: []string{"fd00::7", "10.244.0.7"}, hostIPs: []string{"10.0.0.5"}, want: "10.244.0.7"},
		{name: "host IP", path: "status.hostIP", hostIPs: []string{"10.0.0.5", "fd00::5"}, want: "10.0.0.5"},
		{name: "host IPs", path: "status.hostIPs", hostIPs: []string{"10.0.0.5", "fd00::5"}, want: "10.0.0.5,fd00::5"},
		{name: "host IP from options", path: "status.hostIP", o: Options{HostIPs: []string{"10.0.0.9"}}, want: "10.0.0.9"},
		{name: "host network pod IP is the host IP", path: "status.podIP", hostIPs: []string{"10.0.0.5"}, podMod: func(p *v1.Pod) { p.Spec.HostNetwork = true }, want: "10.0.0.5"},
		{name: "host IP unknown", path: "status.hostIP", wantErr: true},
		{name: "unsupported path", path: "spec.containers[0].image", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			withEnv(fieldRef("V", tc.path))(p)
			if tc.podMod != nil {
				tc.podMod(p)
			}
			got, err := envOf(t, ContainerInputs{Pod: p, Container: &p.Spec.Containers[0], PodIPs: tc.podIPs, HostIPs: tc.hostIPs}, tc.o)
			if tc.wantErr {
				if !errors.Is(err, ErrContainerConfig) {
					t.Fatalf("err = %v, want ErrContainerConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if len(got) != 1 || got[0][1] != tc.want {
				t.Errorf("env = %v, want V=%q", got, tc.want)
			}
		})
	}
}

func TestEnvResourceFieldRef(t *testing.T) {
	machine := Options{MachineCPUMilli: 4000, MachineMemoryBytes: 8 << 30, MachineEphemeralStorageBytes: 100 << 30}
	withLimits := func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: rl("cpu", "250m", "memory", "64Mi", "hugepages-2Mi", "4Mi"),
			Limits:   rl("cpu", "1500m", "memory", "128Mi", "ephemeral-storage", "1Gi", "hugepages-2Mi", "4Mi"),
		}
	}
	tests := []struct {
		name    string
		ref     v1.ResourceFieldSelector
		podMod  func(*v1.Pod)
		want    string
		wantErr bool
	}{
		{name: "cpu limit in cores rounds up", ref: v1.ResourceFieldSelector{Resource: "limits.cpu"}, podMod: withLimits, want: "2"},
		{name: "cpu limit in millicores", ref: v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, podMod: withLimits, want: "1500"},
		{name: "cpu request", ref: v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, podMod: withLimits, want: "250"},
		{name: "memory limit in bytes", ref: v1.ResourceFieldSelector{Resource: "limits.memory"}, podMod: withLimits, want: "134217728"},
		{name: "memory limit in Mi", ref: v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, podMod: withLimits, want: "128"},
		{name: "memory request in Gi rounds up", ref: v1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Gi")}, podMod: withLimits, want: "1"},
		{name: "ephemeral storage limit in Mi", ref: v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Mi")}, podMod: withLimits, want: "1024"},
		{name: "hugepages limit", ref: v1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}, podMod: withLimits, want: "4"},
		{name: "no cpu limit reads node capacity", ref: v1.ResourceFieldSelector{Resource: "limits.cpu"}, want: "4"},
		{name: "no memory limit reads node capacity", ref: v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}, want: "8"},
		{name: "no storage limit reads node capacity", ref: v1.ResourceFieldSelector{Resource: "limits.ephemeral-storage", Divisor: resource.MustParse("1Gi")}, want: "100"},
		{name: "no request reads zero", ref: v1.ResourceFieldSelector{Resource: "requests.memory"}, want: "0"},
		{
			name:   "no container limit reads the pod-level limit",
			ref:    v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")},
			podMod: func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{Limits: rl("memory", "512Mi")} },
			want:   "512",
		},
		{
			name: "another container by name",
			ref:  v1.ResourceFieldSelector{ContainerName: "side", Resource: "limits.cpu", Divisor: resource.MustParse("1m")},
			podMod: func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{Limits: rl("cpu", "300m")}})
			},
			want: "300",
		},
		{name: "unknown container", ref: v1.ResourceFieldSelector{ContainerName: "nope", Resource: "limits.cpu"}, wantErr: true},
		{name: "unsupported resource", ref: v1.ResourceFieldSelector{Resource: "limits.example.com/gpu"}, wantErr: true},
		{name: "malformed resource", ref: v1.ResourceFieldSelector{Resource: "cpu"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := tc.ref
			p := testPod(withEnv(v1.EnvVar{Name: "V", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &ref}}))
			if tc.podMod != nil {
				tc.podMod(p)
			}
			got, err := envOf(t, ContainerInputs{Pod: p, Container: &p.Spec.Containers[0]}, machine)
			if tc.wantErr {
				if !errors.Is(err, ErrContainerConfig) {
					t.Fatalf("err = %v, want ErrContainerConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if len(got) != 1 || got[0][1] != tc.want {
				t.Errorf("env = %v, want V=%q", got, tc.want)
			}
		})
	}
}

func TestEnvConfigMapsAndSecrets(t *testing.T) {
	cmKey := func(name, cm, key string, optional bool) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: cm}, Key: key, Optional: &optional}}}
	}
	secretKey := func(name, s, key string, optional bool) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: s}, Key: key, Optional: &optional}}}
	}
	src := func() *fakeEnvSource {
		return &fakeEnvSource{
			configMaps: map[string]map[string]string{"cfg": {"mode": "prod", "level": "debug"}},
			secrets:    map[string]map[string]string{"creds": {"password": "s3cr3t"}},
		}
	}
	tests := []struct {
		name    string
		env     []v1.EnvVar
		from    []v1.EnvFromSource
		nilSrc  bool
		want    [][2]string
		wantErr string
	}{
		{
			name: "config map and secret keys",
			env:  []v1.EnvVar{cmKey("MODE", "cfg", "mode", false), secretKey("PW", "creds", "password", false)},
			want: [][2]string{{"MODE", "prod"}, {"PW", "s3cr3t"}},
		},
		{
			name: "optional missing key or object leaves the variable out",
			env:  []v1.EnvVar{cmKey("A", "cfg", "nope", true), cmKey("B", "gone", "x", true), secretKey("C", "gone", "x", true), {Name: "D", Value: "d"}},
			want: [][2]string{{"D", "d"}},
		},
		{name: "missing key", env: []v1.EnvVar{cmKey("A", "cfg", "nope", false)}, wantErr: "couldn't find key nope in ConfigMap shop/cfg"},
		{name: "missing secret key", env: []v1.EnvVar{secretKey("A", "creds", "nope", false)}, wantErr: "couldn't find key nope in Secret shop/creds"},
		{name: "missing config map", env: []v1.EnvVar{cmKey("A", "gone", "x", false)}, wantErr: `configmaps "gone" not found`},
		{
			name: "envFrom with prefix, keys sorted, env overrides",
			from: []v1.EnvFromSource{
				{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: ptr(true)}},
			},
			env:  []v1.EnvVar{{Name: "CFG_mode", Value: "override-$(password)"}},
			want: [][2]string{{"CFG_level", "debug"}, {"CFG_mode", "override-s3cr3t"}, {"password", "s3cr3t"}},
		},
		{
			name:    "envFrom missing required config map",
			from:    []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}}},
			wantErr: `configmaps "gone" not found`,
		},
		{
			name: "standalone kubelet cannot resolve even optional references",
			env:  []v1.EnvVar{cmKey("A", "cfg", "mode", true)}, nilSrc: true,
			wantErr: "couldn't get configMap shop/cfg, no API server connection",
		},
		{
			name: "standalone kubelet cannot resolve secrets",
			from: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}}}, nilSrc: true,
			wantErr: "couldn't get secret shop/creds, no API server connection",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod(func(p *v1.Pod) { p.Spec.Containers[0].Env, p.Spec.Containers[0].EnvFrom = tc.env, tc.from })
			o := Options{}
			if !tc.nilSrc {
				o.EnvSource = src()
			}
			got, err := envOf(t, ContainerInputs{Pod: p, Container: &p.Spec.Containers[0]}, o)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrContainerConfig) {
					t.Fatalf("err = %v, want ErrContainerConfig", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %q, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEnvSourceObjectsFetchedOnce(t *testing.T) {
	src := &fakeEnvSource{configMaps: map[string]map[string]string{"cfg": {"a": "1", "b": "2"}}}
	p := testPod(func(p *v1.Pod) {
		ref := func(key string) *v1.EnvVarSource {
			return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: key}}
		}
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: ref("a")}, {Name: "B", ValueFrom: ref("b")}}
	})
	if _, err := envOf(t, ContainerInputs{Pod: p, Container: &p.Spec.Containers[0]}, Options{EnvSource: src}); err != nil {
		t.Fatalf("ContainerConfig: %v", err)
	}
	if src.calls != 1 {
		t.Errorf("config map fetched %d times, want 1", src.calls)
	}
}

// TestEnvServicesUnavailable: a pod from the API server waits for the
// services, a static pod starts without their variables (kubeadm's control
// plane is made of static pods that run before there is an API server).
func TestEnvServicesUnavailable(t *testing.T) {
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name    string
		source  string
		wantErr bool
	}{
		{"api pod", "api", true},
		{"file static pod", "file", false},
		{"http static pod", "http", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod(func(p *v1.Pod) {
				p.Annotations["kubernetes.io/config.source"] = tc.source
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}}
			})
			got, err := envOf(t, ContainerInputs{Pod: p, Container: &p.Spec.Containers[0]}, Options{EnvSource: &fakeEnvSource{servicesErr: down}})
			if tc.wantErr {
				if err == nil || !errors.Is(err, down) {
					t.Fatalf("err = %v, want the services error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if !reflect.DeepEqual(got, [][2]string{{"A", "1"}}) {
				t.Errorf("env = %v, want only A=1", got)
			}
		})
	}
}
