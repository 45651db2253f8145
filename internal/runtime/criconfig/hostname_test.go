package criconfig

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestPodHostnameAndDomain(t *testing.T) {
	long := strings.Repeat("a", 62) + "-bcd" // 66 chars; cut at 63 leaves a trailing '-'
	tests := []struct {
		name       string
		pod        *v1.Pod
		wantHost   string
		wantDomain string
		wantErr    bool
	}{
		{name: "pod name", pod: testPod(), wantHost: "web"},
		{name: "spec hostname", pod: testPod(func(p *v1.Pod) { p.Spec.Hostname = "db-0" }), wantHost: "db-0"},
		{
			name:     "subdomain gives a domain",
			pod:      testPod(func(p *v1.Pod) { p.Spec.Hostname = "db-0"; p.Spec.Subdomain = "db" }),
			wantHost: "db-0", wantDomain: "db.shop.svc.cluster.local",
		},
		{
			name:     "long name truncated to 63 without trailing dash",
			pod:      testPod(func(p *v1.Pod) { p.Name = long }),
			wantHost: strings.Repeat("a", 62),
		},
		{
			name:     "exactly 63 characters kept",
			pod:      testPod(func(p *v1.Pod) { p.Name = strings.Repeat("b", 63) }),
			wantHost: strings.Repeat("b", 63),
		},
		{
			name:     "hostname override wins and has no domain",
			pod:      testPod(func(p *v1.Pod) { p.Spec.HostnameOverride = ptr("my.host.example"); p.Spec.Subdomain = "db" }),
			wantHost: "my.host.example",
		},
		{name: "invalid hostname", pod: testPod(func(p *v1.Pod) { p.Spec.Hostname = "Not_Valid" }), wantErr: true},
		{name: "invalid subdomain", pod: testPod(func(p *v1.Pod) { p.Spec.Subdomain = "a.b" }), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, domain, err := PodHostnameAndDomain(tc.pod, "cluster.local")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if host != tc.wantHost || domain != tc.wantDomain {
				t.Errorf("got (%q, %q), want (%q, %q)", host, domain, tc.wantHost, tc.wantDomain)
			}
		})
	}
}

func TestSandboxHostname(t *testing.T) {
	tests := []struct {
		name    string
		pod     *v1.Pod
		want    string
		wantErr bool
	}{
		{name: "short hostname", pod: testPod(func(p *v1.Pod) { p.Spec.Subdomain = "db" }), want: "web"},
		{
			name: "setHostnameAsFQDN uses the FQDN",
			pod:  testPod(func(p *v1.Pod) { p.Spec.Subdomain = "db"; p.Spec.SetHostnameAsFQDN = ptr(true) }),
			want: "web.db.shop.svc.cluster.local",
		},
		{
			name: "setHostnameAsFQDN without subdomain keeps the short name",
			pod:  testPod(func(p *v1.Pod) { p.Spec.SetHostnameAsFQDN = ptr(true) }),
			want: "web",
		},
		{
			name: "FQDN over 64 characters is an error",
			pod: testPod(func(p *v1.Pod) {
				p.Name = strings.Repeat("x", 40)
				p.Spec.Subdomain = "db"
				p.Spec.SetHostnameAsFQDN = ptr(true)
			}),
			wantErr: true,
		},
		{name: "host network keeps the node's hostname", pod: testPod(func(p *v1.Pod) { p.Spec.HostNetwork = true }), want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := SandboxConfig(tc.pod, 0, Options{ClusterDomain: "cluster.local", ClusterDNS: []string{"10.96.0.10"}})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && cfg.Hostname != tc.want {
				t.Errorf("hostname = %q, want %q", cfg.Hostname, tc.want)
			}
		})
	}
}
