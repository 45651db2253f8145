package options

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func TestUnsupportedConfigFields(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *kubeletconfigv1beta1.KubeletConfiguration)
		want   []string
	}{
		{"defaults", func(c *kubeletconfigv1beta1.KubeletConfiguration) {}, nil},
		{"supported fields changed", func(c *kubeletconfigv1beta1.KubeletConfiguration) {
			c.MaxOpenFiles = 10
			c.RegistryBurst = 3
			c.StaticPodPath = "/etc/kubernetes/manifests"
			c.Logging.Verbosity = 4
		}, nil},
		{"unsupported fields changed", func(c *kubeletconfigv1beta1.KubeletConfiguration) {
			c.KubeletCgroups = "/kubelet"
			c.Authentication.Anonymous.Enabled = ptr.To(true)
			c.TopologyManagerScope = "pod"
		}, []string{"kubeletCgroups", "topologyManagerScope"}},
		{"unsupported field set to its default value", func(c *kubeletconfigv1beta1.KubeletConfiguration) {
			c.NodeLeaseDurationSeconds = 40
		}, nil},
		{"derived default follows its source without a warning of its own", func(c *kubeletconfigv1beta1.KubeletConfiguration) {
			c.NodeStatusUpdateFrequency = metav1.Duration{Duration: 20 * time.Second}
			c.NodeStatusReportFrequency = metav1.Duration{Duration: 20 * time.Second}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &kubeletconfigv1beta1.KubeletConfiguration{}
			SetDefaults(c)
			tc.mutate(c)
			if got := UnsupportedConfigFields(c); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("UnsupportedConfigFields = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSupportedConfigFieldsAreRealFields(t *testing.T) {
	known := map[string]bool{}
	for _, name := range configFieldNames() {
		known[name] = true
	}
	for name := range SupportedConfigFields {
		if !known[name] {
			t.Errorf("SupportedConfigFields has %q, which is not a KubeletConfiguration field", name)
		}
	}
	for _, cf := range configFlags {
		if !known[cf.field] {
			t.Errorf("flag --%s maps to unknown field %q", cf.name, cf.field)
		}
	}
}

func TestUnsupportedFlagsConsistent(t *testing.T) {
	if !sort.StringsAreSorted(UnsupportedFlags) {
		t.Error("UnsupportedFlags is not sorted")
	}
	fs := newFlagSet(NewKubeletFlags(), NewDefaultConfig())
	registered := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { registered[f.Name] = true })
	listed := map[string]bool{}
	for _, name := range UnsupportedFlags {
		if listed[name] {
			t.Errorf("%q listed twice", name)
		}
		listed[name] = true
		if !registered[name] {
			t.Errorf("UnsupportedFlags has %q, which is not registered", name)
		}
	}
	cases := []struct {
		flag        string
		unsupported bool
	}{
		{"config", false}, {"kubeconfig", false}, {"node-labels", false}, {"v", false}, {"vmodule", false},
		{"pod-manifest-path", false}, {"max-pods", false}, {"runonce", false}, {"container-runtime-endpoint", false}, {"fail-swap-on", false},
		{"cgroup-root", false}, {"kubelet-cgroups", true}, {"anonymous-auth", false}, {"eviction-hard", false}, {"pod-infra-container-image", true},
		{"housekeeping-interval", true}, {"cloud-provider", false}, {"log-json-split-stream", true},
	}
	for _, tc := range cases {
		if !registered[tc.flag] {
			t.Errorf("--%s is not registered", tc.flag)
		}
		if listed[tc.flag] != tc.unsupported {
			t.Errorf("--%s unsupported = %v, want %v", tc.flag, listed[tc.flag], tc.unsupported)
		}
	}
}

func TestUpstreamFlagNamesRegistered(t *testing.T) {
	fs := newFlagSet(NewKubeletFlags(), NewDefaultConfig())
	// A sample of flags found in real systemd units and kubeadm flag files.
	for _, name := range []string{
		"address", "allowed-unsafe-sysctls", "anonymous-auth", "authentication-token-webhook", "authorization-mode",
		"bootstrap-kubeconfig", "cert-dir", "cgroup-driver", "cgroup-root", "cgroups-per-qos", "client-ca-file",
		"cloud-provider", "cluster-dns", "cluster-domain", "config", "config-dir", "container-log-max-files",
		"container-log-max-size", "container-runtime-endpoint", "cpu-manager-policy", "enforce-node-allocatable",
		"eviction-hard", "eviction-soft", "eviction-soft-grace-period", "exit-on-lock-contention", "fail-swap-on",
		"feature-gates", "file-check-frequency", "healthz-bind-address", "healthz-port", "hostname-override",
		"http-check-frequency", "image-credential-provider-bin-dir", "image-credential-provider-config",
		"image-gc-high-threshold", "image-gc-low-threshold", "image-service-endpoint", "kube-api-burst", "kube-api-qps",
		"kube-reserved", "kube-reserved-cgroup", "kubeconfig", "kubelet-cgroups", "lock-file", "make-iptables-util-chains",
		"manifest-url", "manifest-url-header", "max-open-files", "max-pods", "minimum-image-ttl-duration", "node-ip",
		"node-labels", "node-status-update-frequency", "oom-score-adj", "pod-cidr", "pod-infra-container-image",
		"pod-manifest-path", "pod-max-pids", "port", "protect-kernel-defaults", "provider-id", "read-only-port",
		"register-node", "register-with-taints", "registry-burst", "registry-qps", "reserved-cpus", "resolv-conf",
		"root-dir", "rotate-certificates", "rotate-server-certificates", "runonce", "runtime-cgroups",
		"runtime-request-timeout", "serialize-image-pulls", "streaming-connection-idle-timeout", "sync-frequency",
		"system-cgroups", "system-reserved", "system-reserved-cgroup", "tls-cert-file", "tls-cipher-suites",
		"tls-min-version", "tls-private-key-file", "topology-manager-policy", "v", "version", "vmodule",
		"volume-plugin-dir", "logging-format", "log-flush-frequency", "event-qps", "event-burst",
		"enable-debugging-handlers", "enable-server", "seccomp-default", "reserved-memory", "memory-manager-policy",
	} {
		if fs.Lookup(name) == nil {
			t.Errorf("--%s is not registered", name)
		}
	}
}
