package podinputs

import (
	"context"
	"errors"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func service(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: ip, Ports: ports},
	}
}

func port(name string, number int32, proto v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: number, Protocol: proto}
}

var masterEnv = map[string]string{
	"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
	"KUBERNETES_SERVICE_PORT":       "443",
	"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_443_TCP_PORT":  "443",
	"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
}

func masterService() *v1.Service {
	return service("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP))
}

func TestServiceEnvVars(t *testing.T) {
	tests := []struct {
		name     string
		services []*v1.Service
		want     map[string]string
	}{
		{
			name:     "master service",
			services: []*v1.Service{masterService()},
			want:     masterEnv,
		},
		{
			name: "unnamed first port and a named UDP port",
			services: []*v1.Service{service("ns", "my-svc", "10.0.0.5",
				port("", 80, v1.ProtocolTCP), port("dns-udp", 53, v1.ProtocolUDP))},
			want: map[string]string{
				"MY_SVC_SERVICE_HOST":         "10.0.0.5",
				"MY_SVC_SERVICE_PORT":         "80",
				"MY_SVC_SERVICE_PORT_DNS_UDP": "53",
				"MY_SVC_PORT":                 "tcp://10.0.0.5:80",
				"MY_SVC_PORT_80_TCP":          "tcp://10.0.0.5:80",
				"MY_SVC_PORT_80_TCP_PROTO":    "tcp",
				"MY_SVC_PORT_80_TCP_PORT":     "80",
				"MY_SVC_PORT_80_TCP_ADDR":     "10.0.0.5",
				"MY_SVC_PORT_53_UDP":          "udp://10.0.0.5:53",
				"MY_SVC_PORT_53_UDP_PROTO":    "udp",
				"MY_SVC_PORT_53_UDP_PORT":     "53",
				"MY_SVC_PORT_53_UDP_ADDR":     "10.0.0.5",
			},
		},
		{
			name: "empty protocol means TCP, named first port",
			services: []*v1.Service{service("ns", "web", "10.0.0.7",
				port("http", 8080, ""), port("metrics", 9090, ""))},
			want: map[string]string{
				"WEB_SERVICE_HOST":         "10.0.0.7",
				"WEB_SERVICE_PORT":         "8080",
				"WEB_SERVICE_PORT_HTTP":    "8080",
				"WEB_SERVICE_PORT_METRICS": "9090",
				"WEB_PORT":                 "tcp://10.0.0.7:8080",
				"WEB_PORT_8080_TCP":        "tcp://10.0.0.7:8080",
				"WEB_PORT_8080_TCP_PROTO":  "tcp",
				"WEB_PORT_8080_TCP_PORT":   "8080",
				"WEB_PORT_8080_TCP_ADDR":   "10.0.0.7",
				"WEB_PORT_9090_TCP":        "tcp://10.0.0.7:9090",
				"WEB_PORT_9090_TCP_PROTO":  "tcp",
				"WEB_PORT_9090_TCP_PORT":   "9090",
				"WEB_PORT_9090_TCP_ADDR":   "10.0.0.7",
			},
		},
		{
			name:     "IPv6 cluster IP is bracketed in URLs only",
			services: []*v1.Service{service("ns", "v6", "fd00::10", port("", 443, v1.ProtocolSCTP))},
			want: map[string]string{
				"V6_SERVICE_HOST":        "fd00::10",
				"V6_SERVICE_PORT":        "443",
				"V6_PORT":                "sctp://[fd00::10]:443",
				"V6_PORT_443_SCTP":       "sctp://[fd00::10]:443",
				"V6_PORT_443_SCTP_PROTO": "sctp",
				"V6_PORT_443_SCTP_PORT":  "443",
				"V6_PORT_443_SCTP_ADDR":  "fd00::10",
			},
		},
		{
			name: "headless and IP-less services are skipped",
			services: []*v1.Service{
				service("ns", "headless", v1.ClusterIPNone, port("", 80, v1.ProtocolTCP)),
				service("ns", "external", "", port("", 80, v1.ProtocolTCP)),
			},
			want: map[string]string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ServiceEnvVars(tc.services)
			if !maps.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestServiceEnv(t *testing.T) {
	web := service("ns", "web", "10.0.0.7", port("", 80, v1.ProtocolTCP))
	webEnv := ServiceEnvVars([]*v1.Service{web})
	other := service("other", "db", "10.0.0.9", port("", 5432, v1.ProtocolTCP))
	headless := service("ns", "headless", v1.ClusterIPNone, port("", 80, v1.ProtocolTCP))
	defaultSvc := service("default", "frontend", "10.0.0.11", port("", 80, v1.ProtocolTCP))
	localMaster := service("ns", "kubernetes", "10.0.0.12", port("", 8443, v1.ProtocolTCP))
	headlessLocalMaster := service("ns", "kubernetes", v1.ClusterIPNone, port("", 8443, v1.ProtocolTCP))

	tests := []struct {
		name      string
		objs      []runtime.Object
		namespace string
		links     bool
		want      map[string]string
	}{
		{
			name:      "links on: namespace services and the master service",
			objs:      []runtime.Object{masterService(), web, other, headless},
			namespace: "ns", links: true,
			want: merge(masterEnv, webEnv),
		},
		{
			name:      "links off: only the master service",
			objs:      []runtime.Object{masterService(), web, other},
			namespace: "ns", links: false,
			want: masterEnv,
		},
		{
			name:      "links off in the default namespace: only the master service",
			objs:      []runtime.Object{masterService(), defaultSvc},
			namespace: "default", links: false,
			want: masterEnv,
		},
		{
			name:      "links on in the default namespace",
			objs:      []runtime.Object{masterService(), defaultSvc},
			namespace: "default", links: true,
			want: merge(masterEnv, ServiceEnvVars([]*v1.Service{defaultSvc})),
		},
		{
			name:      "a namespace service named kubernetes wins over the master",
			objs:      []runtime.Object{masterService(), localMaster},
			namespace: "ns", links: true,
			want: ServiceEnvVars([]*v1.Service{localMaster}),
		},
		{
			name:      "a headless namespace service named kubernetes does not hide the master",
			objs:      []runtime.Object{masterService(), headlessLocalMaster},
			namespace: "ns", links: true,
			want: masterEnv,
		},
		{
			name:      "no master service",
			objs:      []runtime.Object{web},
			namespace: "ns", links: true,
			want: webEnv,
		},
		{
			name:      "no services at all",
			namespace: "ns", links: false,
			want: map[string]string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newTestSource(tc.objs...)
			got, err := s.ServiceEnv(context.Background(), tc.namespace, tc.links)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func merge(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range envs {
		maps.Copy(out, e)
	}
	return out
}

func TestServiceEnvCaching(t *testing.T) {
	ctx := context.Background()
	s, cs, clk := newTestSource(masterService())
	if _, err := s.ServiceEnv(ctx, "ns", true); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("ns").Create(ctx, service("ns", "web", "10.0.0.7", port("", 80, v1.ProtocolTCP)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	clk.Step(DefaultServiceTTL / 2)
	got, err := s.ServiceEnv(ctx, "ns", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["WEB_SERVICE_HOST"]; ok {
		t.Error("service list was read again within the TTL")
	}
	if l, g := calls(cs, "list", "services"), calls(cs, "get", "services"); l != 1 || g != 1 {
		t.Errorf("%d lists and %d gets within the TTL, want 1 and 1", l, g)
	}

	clk.Step(DefaultServiceTTL / 2)
	got, err = s.ServiceEnv(ctx, "ns", true)
	if err != nil {
		t.Fatal(err)
	}
	if got["WEB_SERVICE_HOST"] != "10.0.0.7" {
		t.Errorf("new service not seen after the TTL: %v", got)
	}
	if l := calls(cs, "list", "services"); l != 2 {
		t.Errorf("%d lists after the TTL, want 2", l)
	}
}

func TestServiceEnvErrors(t *testing.T) {
	boom := errors.New("apiserver down")
	tests := []struct {
		name string
		verb string
	}{
		{name: "list fails", verb: "list"},
		{name: "master get fails", verb: "get"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, cs, _ := newTestSource(masterService())
			cs.PrependReactor(tc.verb, "services", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, boom
			})
			if _, err := s.ServiceEnv(context.Background(), "ns", true); !errors.Is(err, boom) {
				t.Fatalf("err = %v, want it to wrap %v", err, boom)
			}
		})
	}
}
