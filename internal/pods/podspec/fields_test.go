package podspec

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Every field of the pod spec types, as the Go types of k8s.io/api define
// them, is classified; an API field added in a new release fails here until
// someone decides whether the kubelet honours, rejects or warns about it.
// Fields of an Honoured struct field's type are walked too (unless Whole).
func TestEveryPodSpecFieldClassified(t *testing.T) {
	reached, reachedPaths := map[string]bool{}, map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(path string, t reflect.Type)
	var missing []string
	walk = func(path string, ty reflect.Type) {
		for i := 0; i < ty.NumField(); i++ {
			sf := ty.Field(i)
			if sf.Anonymous {
				walk(path, sf.Type)
				continue
			}
			key := ty.Name() + "." + JSONName(sf)
			p := path + "." + JSONName(sf)
			reached[key] = true
			reachedPaths[p] = true
			if seen[ty] {
				continue // its fields were checked on an earlier path
			}
			f, ok := Fields[key]
			if !ok {
				missing = append(missing, key+" ("+sf.Type.String()+")")
				continue
			}
			if f.Class != Honoured || f.Whole {
				continue
			}
			elem := sf.Type
			for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice || elem.Kind() == reflect.Map {
				if elem.Kind() == reflect.Slice {
					p += "[]"
				}
				elem = elem.Elem()
			}
			if elem.Kind() == reflect.Struct && elem.PkgPath() == corev1Path && depth(p) < 12 {
				walk(p, elem)
			}
		}
		seen[ty] = true
	}
	walk("spec", reflect.TypeOf(v1.PodSpec{}))
	for p := range Overrides {
		if !reachedPaths[p] {
			t.Errorf("podspec.Overrides has %s, which the walk from PodSpec does not reach", p)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("pod spec field %s is not classified in podspec.Fields: honoured, delegated, rejected, container error, waits or warned?", m)
	}
	for key, f := range Fields {
		if !reached[key] {
			t.Errorf("podspec.Fields has %s, which the walk from PodSpec does not reach (gone from the API, or below a field that is not walked)", key)
		}
		if f.Note == "" {
			t.Errorf("%s: no note saying where it is handled or why not", key)
		}
		if (f.Class == Rejected) != (f.Reason != "") {
			t.Errorf("%s: class %s with reason %q (only rejected fields carry a reason)", key, f.Class, f.Reason)
		}
		if f.Whole && f.Class != Honoured {
			t.Errorf("%s: Whole is only for honoured fields", key)
		}
	}
	t.Logf("%d fields classified over %d types", len(Fields), len(seen))
}

func depth(path string) int { return strings.Count(path, ".") }

func TestUnsupportedAndRejection(t *testing.T) {
	base := func(mutate func(*v1.PodSpec)) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "busybox", ReadinessProbe: &v1.Probe{
				ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}},
			Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000),
				WindowsOptions: &v1.WindowsSecurityContextOptions{RunAsUserName: ptr.To("x")}},
			Affinity:        &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}},
			SchedulingGates: nil,
			OS:              &v1.PodOS{Name: v1.Linux},
		}}
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	cases := []struct {
		name       string
		pod        *v1.Pod
		want       []string
		wantReason string
	}{
		{name: "plain pod: honoured and delegated fields only", pod: base(nil)},
		{name: "volumes without a plugin wait; a token projection is honoured, a trust bundle warned", pod: base(func(s *v1.PodSpec) {
			s.Volumes = append(s.Volumes,
				v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
					{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}},
				}}}},
				v1.Volume{Name: "claim", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
				v1.Volume{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}},
				v1.Volume{Name: "share", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/"}}})
		}), want: []string{"spec.volumes[1].projected.sources[1].clusterTrustBundle", "spec.volumes[4].nfs"}},
		{name: "DRA claims and restart rules are warned, in init, regular and ephemeral containers", pod: base(func(s *v1.PodSpec) {
			s.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
			s.InitContainers = []v1.Container{{Name: "init", RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}}}
			s.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
			s.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug",
				VolumeDevices: []v1.VolumeDevice{{Name: "blk", DevicePath: "/dev/x"}}}}}
		}), want: []string{"spec.initContainers[0].restartPolicyRules", "spec.containers[0].resources.claims", "spec.resourceClaims"}},
		{name: "a regular container's restartPolicy is warned; an init container's (sidecar) is honoured", pod: base(func(s *v1.PodSpec) {
			s.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}}
			s.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
		}), want: []string{"spec.containers[0].restartPolicy"}},
		{name: "an empty list is not set", pod: base(func(s *v1.PodSpec) {
			s.ResourceClaims = []v1.PodResourceClaim{}
			s.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{}
		})},
		{name: "runtimeClassName is honoured", pod: base(func(s *v1.PodSpec) { s.RuntimeClassName = ptr.To("gvisor") })},
		{name: "a fileKeyRef fails its container (not a warning, not an admission rejection)", pod: base(func(s *v1.PodSpec) {
			s.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "scratch", Path: "env", Key: "A"}}}}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range Unsupported(tc.pod) {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Unsupported = %q, want %q", got, tc.want)
			}
			reason, msg, rejected := Rejection(tc.pod)
			if rejected != (tc.wantReason != "") || reason != tc.wantReason {
				t.Errorf("Rejection = %q, %q, %v; want reason %q", reason, msg, rejected, tc.wantReason)
			}
		})
	}
	// No field is Rejected today; an override stands in for one.
	Overrides["spec.hostPID"] = Field{Class: Rejected, Reason: "TestRejected", Note: "not here"}
	defer delete(Overrides, "spec.hostPID")
	reason, msg, rejected := Rejection(base(func(s *v1.PodSpec) { s.HostPID = true }))
	const want = "Pod sets spec.hostPID, which this kubelet does not support: not here"
	if !rejected || reason != "TestRejected" || msg != want {
		t.Errorf("rejection %v %q %q, want TestRejected %q", rejected, reason, msg, want)
	}
}
