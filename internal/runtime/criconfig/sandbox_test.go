package criconfig

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxConfigBasics(t *testing.T) {
	pod := testPod()
	o := Options{PodLogsDir: "/logs", ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", CgroupParent: "/kubepods/besteffort/poduid-1"}
	cfg, warnings, err := SandboxConfig(pod, 3, o)
	if err != nil {
		t.Fatalf("SandboxConfig: %v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %v", warnings)
	}
	wantMeta := &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "uid-1", Attempt: 3}
	if !proto.Equal(cfg.Metadata, wantMeta) {
		t.Errorf("metadata = %v, want %v", cfg.Metadata, wantMeta)
	}
	wantLabels := map[string]string{"app": "web", LabelPodName: "web", LabelPodNamespace: "shop", LabelPodUID: "uid-1"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	if !reflect.DeepEqual(cfg.Annotations, pod.Annotations) {
		t.Errorf("annotations = %v, want %v", cfg.Annotations, pod.Annotations)
	}
	if cfg.LogDirectory != "/logs/shop_web_uid-1" || cfg.Hostname != "web" {
		t.Errorf("log dir %q hostname %q", cfg.LogDirectory, cfg.Hostname)
	}
	if cfg.DnsConfig.GetServers()[0] != "10.96.0.10" {
		t.Errorf("dns = %v", cfg.DnsConfig)
	}
	lc := cfg.Linux
	if lc.CgroupParent != o.CgroupParent {
		t.Errorf("cgroup parent = %q", lc.CgroupParent)
	}
	if lc.SecurityContext.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("sandbox seccomp = %v, want RuntimeDefault", lc.SecurityContext.Seccomp)
	}
	if lc.Sysctls == nil || len(lc.Sysctls) != 0 {
		t.Errorf("sysctls = %v, want empty map", lc.Sysctls)
	}
}

func TestSandboxConfigWarnings(t *testing.T) {
	_, warnings, err := SandboxConfig(testPod(), 0, Options{})
	if err != nil {
		t.Fatalf("SandboxConfig: %v", err)
	}
	if len(warnings) != 1 || warnings[0].Reason != ReasonMissingClusterDNS {
		t.Errorf("warnings = %v, want one MissingClusterDNS", warnings)
	}
}

func TestSandboxConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		o    Options
	}{
		{name: "unreadable resolv.conf", pod: testPod(), o: Options{ResolvConf: "/missing", ReadFile: files(nil)}},
		{name: "invalid hostname", pod: testPod(func(p *v1.Pod) { p.Spec.Hostname = "-bad" })},
		{name: "user namespace unsupported", pod: testPod(func(p *v1.Pod) { p.Spec.HostUsers = ptr(false) })},
		{
			name: "user namespace allocation fails",
			pod:  testPod(func(p *v1.Pod) { p.Spec.HostUsers = ptr(false) }),
			o: Options{UserNamespace: func(*v1.Pod) (*runtimeapi.UserNamespace, error) {
				return nil, errors.New("no free range")
			}},
		},
		{
			name: "unknown supplemental groups policy",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr(v1.SupplementalGroupsPolicy("Loose"))
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := SandboxConfig(tc.pod, 0, tc.o); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestPortMappings(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want []*runtimeapi.PortMapping
	}{
		{name: "no ports", pod: testPod()},
		{
			name: "protocols, host ports and host IPs",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{
					{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
					{Name: "dns", ContainerPort: 53, HostPort: 53, HostIP: "10.0.0.5", Protocol: v1.ProtocolUDP},
					{ContainerPort: 9000, Protocol: v1.ProtocolSCTP},
					{ContainerPort: 9100},
				}
			}),
			want: []*runtimeapi.PortMapping{
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
				{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 53, HostIp: "10.0.0.5"},
				{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 9000},
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 9100},
			},
		},
		{
			name: "repeated unnamed port counted once, other families kept",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{
					{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP},
					{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP},
					{ContainerPort: 80, HostPort: 80, HostIP: "::", Protocol: v1.ProtocolTCP},
				}
			}),
			want: []*runtimeapi.PortMapping{
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 80},
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 80, HostIp: "::"},
			},
		},
		{
			name: "ports of every regular container, not init containers",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.InitContainers = []v1.Container{{Name: "init", Ports: []v1.ContainerPort{{ContainerPort: 1}}}}
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP}}
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Ports: []v1.ContainerPort{{ContainerPort: 81, HostPort: 81, Protocol: v1.ProtocolTCP}}})
			}),
			want: []*runtimeapi.PortMapping{
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 80},
				{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 81, HostPort: 81},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := SandboxConfig(tc.pod, 0, Options{ClusterDNS: []string{"10.96.0.10"}})
			if err != nil {
				t.Fatalf("SandboxConfig: %v", err)
			}
			if len(cfg.PortMappings) != len(tc.want) {
				t.Fatalf("port mappings = %v, want %v", cfg.PortMappings, tc.want)
			}
			for i := range tc.want {
				if !proto.Equal(cfg.PortMappings[i], tc.want[i]) {
					t.Errorf("mapping %d = %v, want %v", i, cfg.PortMappings[i], tc.want[i])
				}
			}
		})
	}
}

func TestSandboxLinuxSecurity(t *testing.T) {
	nodeUserns := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	podUserns := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
		Uids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}},
		Gids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}}}
	ns := func(net, pid, ipc runtimeapi.NamespaceMode, u *runtimeapi.UserNamespace) *runtimeapi.NamespaceOption {
		return &runtimeapi.NamespaceOption{Network: net, Pid: pid, Ipc: ipc, UsernsOptions: u}
	}
	const (
		pod       = runtimeapi.NamespaceMode_POD
		container = runtimeapi.NamespaceMode_CONTAINER
		node      = runtimeapi.NamespaceMode_NODE
	)
	tests := []struct {
		name string
		pod  *v1.Pod
		want *runtimeapi.LinuxSandboxSecurityContext
	}{
		{
			name: "defaults",
			pod:  testPod(),
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: ns(pod, container, pod, nodeUserns),
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
		{
			name: "host namespaces",
			pod:  testPod(func(p *v1.Pod) { p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true }),
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: ns(node, node, node, nodeUserns),
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
		{
			name: "shared process namespace and a user namespace",
			pod:  testPod(func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr(true); p.Spec.HostUsers = ptr(false) }),
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: ns(pod, pod, pod, podUserns),
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
		{
			name: "run-as, groups, selinux, privileged init container",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{
					RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)), FSGroup: ptr(int64(2000)),
					SupplementalGroups:       []int64{4000, 5000},
					SupplementalGroupsPolicy: ptr(v1.SupplementalGroupsPolicyStrict),
					SELinuxOptions:           &v1.SELinuxOptions{Level: "s0:c1,c2"},
				}
				p.Spec.InitContainers = []v1.Container{{Name: "init", SecurityContext: &v1.SecurityContext{Privileged: ptr(true)}}}
			}),
			want: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions:         ns(pod, container, pod, nodeUserns),
				RunAsUser:                &runtimeapi.Int64Value{Value: 1000},
				RunAsGroup:               &runtimeapi.Int64Value{Value: 3000},
				SupplementalGroups:       []int64{2000, 4000, 5000},
				SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict,
				SelinuxOptions:           &runtimeapi.SELinuxOption{Level: "s0:c1,c2"},
				Privileged:               true,
				Seccomp:                  &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
	o := Options{ClusterDNS: []string{"10.96.0.10"}, UserNamespace: func(*v1.Pod) (*runtimeapi.UserNamespace, error) { return podUserns, nil }}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := SandboxConfig(tc.pod, 0, o)
			if err != nil {
				t.Fatalf("SandboxConfig: %v", err)
			}
			if !proto.Equal(cfg.Linux.SecurityContext, tc.want) {
				t.Errorf("security context =\n%v\nwant\n%v", cfg.Linux.SecurityContext, tc.want)
			}
		})
	}
}

func TestSandboxSysctlsAndResources(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.Spec.SecurityContext.Sysctls = []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		p.Spec.Overhead = rl("cpu", "250m", "memory", "120Mi")
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl("cpu", "500m"), Limits: rl("cpu", "1", "memory", "256Mi")}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{
			Requests: rl("cpu", "250m"), Limits: rl("cpu", "500m", "memory", "256Mi")}})
	})
	cfg, _, err := SandboxConfig(pod, 0, Options{ClusterDNS: []string{"10.96.0.10"}, CgroupV2: true})
	if err != nil {
		t.Fatalf("SandboxConfig: %v", err)
	}
	if got := cfg.Linux.Sysctls; !reflect.DeepEqual(got, map[string]string{"net.core.somaxconn": "1024"}) {
		t.Errorf("sysctls = %v", got)
	}
	wantRes := &runtimeapi.LinuxContainerResources{
		CpuShares: 768, CpuPeriod: 100000, CpuQuota: 150000, MemoryLimitInBytes: 512 << 20,
		Unified: map[string]string{"memory.oom.group": "1"},
	}
	if !proto.Equal(cfg.Linux.Resources, wantRes) {
		t.Errorf("resources = %v, want %v", cfg.Linux.Resources, wantRes)
	}
	wantOverhead := &runtimeapi.LinuxContainerResources{
		CpuShares: 256, CpuPeriod: 100000, CpuQuota: 25000, MemoryLimitInBytes: 120 << 20,
		Unified: map[string]string{"memory.oom.group": "1"},
	}
	if !proto.Equal(cfg.Linux.Overhead, wantOverhead) {
		t.Errorf("overhead = %v, want %v", cfg.Linux.Overhead, wantOverhead)
	}
}
