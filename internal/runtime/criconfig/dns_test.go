package criconfig

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseResolvConf(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    ResolvConf
		wantErr bool
	}{
		{name: "empty", data: "", want: ResolvConf{Nameservers: []string{}, Searches: []string{}, Options: []string{}}},
		{
			name: "typical with comments and blank lines",
			data: "# generated\n\nnameserver 10.0.0.2\n  nameserver 10.0.0.3  \nsearch corp.example. example.com\noptions ndots:2 timeout:1\n",
			want: ResolvConf{Nameservers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"corp.example", "example.com"}, Options: []string{"ndots:2", "timeout:1"}},
		},
		{
			name: "last search and options lines win, root domain dropped",
			data: "search a.example\nsearch b.example .\noptions rotate\noptions edns0\n",
			want: ResolvConf{Nameservers: []string{}, Searches: []string{"b.example"}, Options: []string{"edns0"}},
		},
		{name: "nameserver without address", data: "nameserver\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResolvConf([]byte(tc.data))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPodDNSConfig(t *testing.T) {
	hostResolv := files(map[string]string{"/etc/resolv.conf": "nameserver 192.168.0.1\nsearch corp.example\noptions timeout:2\n"})
	cluster := Options{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: "/etc/resolv.conf", ReadFile: hostResolv}
	tests := []struct {
		name        string
		pod         *v1.Pod
		o           Options
		want        *runtimeapi.DNSConfig
		wantReasons []string
	}{
		{
			name: "cluster first",
			pod:  testPod(),
			o:    cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
				Options:  []string{"ndots:5"},
			},
		},
		{
			name: "cluster first on host network falls back to the host",
			pod:  testPod(func(p *v1.Pod) { p.Spec.HostNetwork = true }),
			o:    cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"192.168.0.1"}, Searches: []string{"corp.example"}, Options: []string{"timeout:2"}},
		},
		{
			name: "cluster first with host net uses cluster DNS",
			pod:  testPod(func(p *v1.Pod) { p.Spec.HostNetwork = true; p.Spec.DNSPolicy = v1.DNSClusterFirstWithHostNet }),
			o:    cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10"},
				Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
				Options:  []string{"ndots:5"},
			},
		},
		{
			name:        "cluster first without cluster DNS falls back to default with a warning",
			pod:         testPod(),
			o:           Options{ResolvConf: "/etc/resolv.conf", ReadFile: hostResolv},
			want:        &runtimeapi.DNSConfig{Servers: []string{"192.168.0.1"}, Searches: []string{"corp.example"}, Options: []string{"timeout:2"}},
			wantReasons: []string{ReasonMissingClusterDNS},
		},
		{
			name: "default policy",
			pod:  testPod(func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault }),
			o:    cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"192.168.0.1"}, Searches: []string{"corp.example"}, Options: []string{"timeout:2"}},
		},
		{
			name: "default policy without resolv.conf uses loopback of the node's family",
			pod:  testPod(func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault }),
			o:    Options{HostIPs: []string{"fd00::1", "10.0.0.5"}},
			want: &runtimeapi.DNSConfig{Servers: []string{"::1", "127.0.0.1"}, Searches: []string{"."}},
		},
		{
			name: "none uses only the pod's dnsConfig",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.DNSPolicy = v1.DNSNone
				p.Spec.DNSConfig = &v1.PodDNSConfig{
					Nameservers: []string{"1.1.1.1"},
					Searches:    []string{"my.example"},
					Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}},
				}
			}),
			o:    cluster,
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"my.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		{
			name: "dnsConfig merges into cluster first, duplicates dropped, options overridden",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.DNSConfig = &v1.PodDNSConfig{
					Nameservers: []string{"10.96.0.10", "8.8.8.8"},
					Searches:    []string{"cluster.local", "extra.example"},
					Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "single-request"}},
				}
			}),
			o: cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10", "8.8.8.8"},
				Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "extra.example"},
				Options:  []string{"ndots:1", "single-request"},
			},
		},
		{
			name: "too many nameservers are trimmed to three",
			pod: testPod(func(p *v1.Pod) {
				p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}}
			}),
			o: cluster,
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10", "1.1.1.1", "2.2.2.2"},
				Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"},
				Options:  []string{"ndots:5"},
			},
			wantReasons: []string{ReasonDNSConfigForming},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := PodDNSConfig(tc.pod, tc.o)
			if err != nil {
				t.Fatalf("PodDNSConfig: %v", err)
			}
			if !proto.Equal(got, tc.want) {
				t.Errorf("config = %+v, want %+v", got, tc.want)
			}
			var reasons []string
			for _, w := range warnings {
				reasons = append(reasons, w.Reason)
			}
			if !reflect.DeepEqual(reasons, tc.wantReasons) {
				t.Errorf("warnings = %v, want reasons %v", warnings, tc.wantReasons)
			}
		})
	}
}

func TestPodDNSConfigSearchLimits(t *testing.T) {
	long := strings.Repeat("a", 254) + ".example"
	var many []string
	for i := 0; i < 40; i++ {
		many = append(many, strings.Repeat(string(rune('a'+i%26)), 10)+"-"+string(rune('a'+i/26))+".example")
	}
	var wide []string
	for i := 0; i < 30; i++ {
		wide = append(wide, strings.Repeat(string(rune('a'+i%26)), 99)+string(rune('a'+i/26)))
	}
	tests := []struct {
		name      string
		searches  []string
		wantCount int
	}{
		{name: "32 paths kept", searches: many[:32], wantCount: 32},
		{name: "paths beyond 32 dropped", searches: many, wantCount: 32},
		{name: "path longer than a DNS name dropped", searches: []string{"ok.example", long}, wantCount: 1},
		// 30 paths of 100 chars join to 3029 chars; 20 fit in 2048 (2019).
		{name: "line longer than 2048 chars cut from the end", searches: wide, wantCount: 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(func(p *v1.Pod) {
				p.Spec.DNSPolicy = v1.DNSNone
				p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: tc.searches}
			})
			got, warnings, err := PodDNSConfig(pod, Options{})
			if err != nil {
				t.Fatalf("PodDNSConfig: %v", err)
			}
			if len(got.Searches) != tc.wantCount {
				t.Fatalf("kept %d searches, want %d", len(got.Searches), tc.wantCount)
			}
			if got.Searches[0] != tc.searches[0] {
				t.Errorf("first search %q, want %q", got.Searches[0], tc.searches[0])
			}
			trimmed := tc.wantCount != len(tc.searches)
			if trimmed != (len(warnings) == 1 && warnings[0].Reason == ReasonDNSConfigForming) {
				t.Errorf("warnings = %v, trimmed = %v", warnings, trimmed)
			}
		})
	}
}

func TestPodDNSConfigResolvConfErrors(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want error
	}{
		{name: "missing file", o: Options{ResolvConf: "/nope", ReadFile: files(nil)}, want: fs.ErrNotExist},
		{name: "malformed file", o: Options{ResolvConf: "/r", ReadFile: files(map[string]string{"/r": "nameserver\n"})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := PodDNSConfig(testPod(), tc.o)
			if err == nil {
				t.Fatal("want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
