package criconfig

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerSecurityContext(t *testing.T) {
	nodeNS := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER,
		Ipc: runtimeapi.NamespaceMode_POD, UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}
	defaults := func(mut func(*runtimeapi.LinuxContainerSecurityContext)) *runtimeapi.LinuxContainerSecurityContext {
		sc := &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: nodeNS,
			MaskedPaths:      defaultMaskedPaths,
			ReadonlyPaths:    defaultReadonlyPaths,
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
		}
		if mut != nil {
			mut(sc)
		}
		return sc
	}
	csc := func(sc *v1.SecurityContext) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = sc }
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		in   ContainerInputs
		o    Options
		want *runtimeapi.LinuxContainerSecurityContext
	}{
		{name: "nothing set", pod: testPod(), want: defaults(nil)},
		{
			name: "capabilities, privileged, read-only rootfs, no escalation",
			pod: testPod(csc(&v1.SecurityContext{
				Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
				Privileged:               ptr(true),
				ReadOnlyRootFilesystem:   ptr(true),
				AllowPrivilegeEscalation: ptr(false),
			})),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}}
				sc.Privileged, sc.ReadonlyRootfs, sc.NoNewPrivs = true, true, true
			}),
		},
		{
			name: "escalation allowed explicitly",
			pod:  testPod(csc(&v1.SecurityContext{AllowPrivilegeEscalation: ptr(true)})),
			want: defaults(nil),
		},
		{
			name: "pod run-as and groups, container user overrides",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{
					RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)), FSGroup: ptr(int64(2000)),
					SupplementalGroups: []int64{4000}, SELinuxOptions: &v1.SELinuxOptions{Type: "pod_t"},
				}
			}, csc(&v1.SecurityContext{RunAsUser: ptr(int64(1001)), SELinuxOptions: &v1.SELinuxOptions{Type: "ctr_t"}})),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.RunAsUser = &runtimeapi.Int64Value{Value: 1001}
				sc.RunAsGroup = &runtimeapi.Int64Value{Value: 3000}
				sc.SupplementalGroups = []int64{2000, 4000}
				sc.SelinuxOptions = &runtimeapi.SELinuxOption{Type: "ctr_t"}
			}),
		},
		{
			name: "image user when no runAsUser",
			pod:  testPod(),
			in:   ContainerInputs{ImageUID: ptr(int64(101))},
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) { sc.RunAsUser = &runtimeapi.Int64Value{Value: 101} }),
		},
		{
			name: "image user name passed through",
			pod:  testPod(),
			in:   ContainerInputs{ImageUsername: "nginx"},
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) { sc.RunAsUsername = "nginx" }),
		},
		{
			name: "unmasked proc mount",
			pod:  testPod(csc(&v1.SecurityContext{ProcMount: ptr(v1.UnmaskedProcMount)})),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
			}),
		},
		{
			name: "seccomp default from the kubelet",
			pod:  testPod(),
			o:    Options{SeccompDefault: true},
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
			}),
		},
		{
			name: "pod seccomp applies",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
			}),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
			}),
		},
		{
			name: "container seccomp overrides the pod's",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
			}, csc(&v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("audit.json")}})),
			o: Options{SeccompProfileRoot: "/var/lib/kubelet/seccomp"},
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/seccomp/audit.json"}
			}),
		},
		{
			name: "container unconfined beats the kubelet default",
			pod:  testPod(csc(&v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}})),
			o:    Options{SeccompDefault: true},
			want: defaults(nil),
		},
		{
			name: "apparmor from the pod",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
			}),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
				sc.ApparmorProfile = "runtime/default"
			}),
		},
		{
			name: "apparmor annotation beats the pod field",
			pod: testPod(func(p *v1.Pod) {
				p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"app"] = "localhost/my-profile"
				p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
			}),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "my-profile"}
				sc.ApparmorProfile = "localhost/my-profile"
			}),
		},
		{
			name: "container apparmor beats everything",
			pod: testPod(func(p *v1.Pod) {
				p.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"app"] = "localhost/my-profile"
			}, csc(&v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}})),
			want: defaults(func(sc *runtimeapi.LinuxContainerSecurityContext) {
				sc.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
				sc.ApparmorProfile = "unconfined"
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Pod, in.Container = tc.pod, &tc.pod.Spec.Containers[0]
			cfg, err := ContainerConfig(context.Background(), in, tc.o)
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			if !proto.Equal(cfg.Linux.SecurityContext, tc.want) {
				t.Errorf("security context =\n%v\nwant\n%v", cfg.Linux.SecurityContext, tc.want)
			}
		})
	}
}

func TestContainerNamespaces(t *testing.T) {
	podUserns := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: []*runtimeapi.IDMapping{{HostId: 1 << 16, Length: 1 << 16}}}
	sandboxWith := func(u *runtimeapi.UserNamespace) *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: u}}}}
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		in         ContainerInputs
		wantPid    runtimeapi.NamespaceMode
		wantTarget string
		wantUserns *runtimeapi.UserNamespace
	}{
		{name: "own pid namespace", pod: testPod(), wantPid: runtimeapi.NamespaceMode_CONTAINER},
		{name: "shared pid namespace", pod: testPod(func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }), wantPid: runtimeapi.NamespaceMode_POD},
		{
			name: "ephemeral container targets another container",
			pod:  testPod(), in: ContainerInputs{TargetContainerID: "abc123"},
			wantPid: runtimeapi.NamespaceMode_TARGET, wantTarget: "abc123",
		},
		{
			name: "target ignored when the pod shares its pid namespace",
			pod:  testPod(func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }), in: ContainerInputs{TargetContainerID: "abc123"},
			wantPid: runtimeapi.NamespaceMode_POD,
		},
		{
			name: "user namespace taken from the sandbox",
			pod:  testPod(func(p *v1.Pod) { p.Spec.HostUsers = ptr(false) }), in: ContainerInputs{SandboxConfig: sandboxWith(podUserns)},
			wantPid: runtimeapi.NamespaceMode_CONTAINER, wantUserns: podUserns,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Pod, in.Container = tc.pod, &tc.pod.Spec.Containers[0]
			in.Mounts = []*runtimeapi.Mount{{HostPath: "/h", ContainerPath: "/c"}}
			cfg, err := ContainerConfig(context.Background(), in, Options{})
			if err != nil {
				t.Fatalf("ContainerConfig: %v", err)
			}
			ns := cfg.Linux.SecurityContext.NamespaceOptions
			if ns.Pid != tc.wantPid || ns.TargetId != tc.wantTarget {
				t.Errorf("pid = %v target %q, want %v %q", ns.Pid, ns.TargetId, tc.wantPid, tc.wantTarget)
			}
			wantUserns := tc.wantUserns
			if wantUserns == nil {
				wantUserns = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
			}
			if !proto.Equal(ns.UsernsOptions, wantUserns) {
				t.Errorf("userns = %v, want %v", ns.UsernsOptions, wantUserns)
			}
			m := cfg.Mounts[0]
			if tc.wantUserns != nil {
				if !proto.Equal(m.UidMappings[0], podUserns.Uids[0]) {
					t.Errorf("mount uid mappings = %v", m.UidMappings)
				}
				if in.Mounts[0].UidMappings != nil {
					t.Errorf("caller's mount was modified")
				}
			} else if m != in.Mounts[0] || m.UidMappings != nil {
				t.Errorf("mounts changed without a user namespace: %v", m)
			}
		})
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	nonRoot := func(p *v1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = ptr(true) }
	tests := []struct {
		name     string
		pod      *v1.Pod
		uid      *int64
		username string
		wantErr  bool
	}{
		{name: "not required", pod: testPod(), uid: ptr(int64(0))},
		{name: "image root", pod: testPod(nonRoot), uid: ptr(int64(0)), wantErr: true},
		{name: "image non-root", pod: testPod(nonRoot), uid: ptr(int64(1000))},
		{name: "image non-numeric user", pod: testPod(nonRoot), username: "nginx", wantErr: true},
		{name: "image without user info", pod: testPod(nonRoot)},
		{name: "runAsUser root", pod: testPod(nonRoot, func(p *v1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr(int64(0)) }), wantErr: true},
		{name: "runAsUser non-root beats a root image", pod: testPod(nonRoot, func(p *v1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr(int64(7)) }), uid: ptr(int64(0))},
		{
			name: "container may opt out",
			pod: testPod(nonRoot, func(p *v1.Pod) {
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr(false)}
			}),
			uid: ptr(int64(0)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := ContainerInputs{Pod: tc.pod, Container: &tc.pod.Spec.Containers[0], ImageUID: tc.uid, ImageUsername: tc.username}
			_, err := ContainerConfig(context.Background(), in, Options{})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, ErrContainerConfig) {
				t.Errorf("err = %v does not wrap ErrContainerConfig", err)
			}
		})
	}
}

func TestSecurityErrors(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
	}{
		{
			name: "localhost seccomp without a profile",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}
			}),
		},
		{
			name: "localhost apparmor without a profile",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost}
			}),
		},
		{name: "user namespace unsupported", pod: testPod(func(p *v1.Pod) { p.Spec.HostUsers = ptr(false) })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ContainerConfig(context.Background(), ContainerInputs{Pod: tc.pod, Container: &tc.pod.Spec.Containers[0]}, Options{})
			if !errors.Is(err, ErrContainerConfig) {
				t.Fatalf("err = %v, want ErrContainerConfig", err)
			}
		})
	}
}
