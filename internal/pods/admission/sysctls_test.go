package admission

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSafeSysctls(t *testing.T) {
	all := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
		"net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
	if got := SafeSysctls("6.18.44-fc-v657"); !reflect.DeepEqual(got, all) {
		t.Fatalf("new kernel: %v", got)
	}
	if got, want := SafeSysctls("4.5.0"), []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
		"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("4.5 kernel: %v", got)
	}
	if got := SafeSysctls("garbage"); len(got) != 5 {
		t.Fatalf("unknown kernel keeps the unconditional five: %v", got)
	}
}

func TestNewSysctlAllowlistErrors(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"vm.swappiness", `the sysctls "vm.swappiness" are not known to be namespaced`},
		{"kernel.*", `the sysctls "kernel." are not known to be namespaced`},
		{"Net.IPv4", `sysctl "Net.IPv4" must have at most 253 characters and match regex`},
		{"net.*.x", `sysctl "net.*.x" must have at most 253 characters and match regex`},
	} {
		_, err := NewSysctlAllowlist([]string{tc.pattern})
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("NewSysctlAllowlist(%q) = %v, want %q...", tc.pattern, err, tc.want)
		}
	}
}

func TestSysctlAdmit(t *testing.T) {
	w, err := NewSysctlAllowlist(append(SafeSysctls("6.1.0"), "kernel.msg*", "net.core.somaxconn", "fs.mqueue.*"))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(hostNet, hostIPC bool, names ...string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	cases := []struct {
		name    string
		pod     *v1.Pod
		wantMsg string
	}{
		{name: "no security context", pod: &v1.Pod{}},
		{name: "safe", pod: pod(false, false, "kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies")},
		{name: "safe in slash form", pod: pod(false, false, "net/ipv4/ip_local_port_range")},
		{name: "allowed unsafe name", pod: pod(false, false, "net.core.somaxconn")},
		{name: "allowed unsafe pattern", pod: pod(false, false, "kernel.msgmax", "fs.mqueue.msg_max")},
		{name: "unsafe", pod: pod(false, false, "kernel.sem"), wantMsg: `forbidden sysctl: "kernel.sem" not allowlisted`},
		{name: "net sysctl with hostNetwork", pod: pod(true, false, "net.ipv4.tcp_syncookies"), wantMsg: `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{name: "ipc sysctl with hostIPC", pod: pod(false, true, "kernel.msgmax"), wantMsg: `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
		{name: "ipc sysctl with hostNetwork only", pod: pod(true, false, "kernel.shm_rmid_forced")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := w.Admit(tc.pod)
			if tc.wantMsg == "" {
				if !r.Admit {
					t.Fatalf("rejected: %+v", r)
				}
				return
			}
			if r.Admit || r.Reason != ReasonSysctlForbidden || r.Message != tc.wantMsg {
				t.Fatalf("Admit = %+v, want %s %q", r, ReasonSysctlForbidden, tc.wantMsg)
			}
		})
	}
}
