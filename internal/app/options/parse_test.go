package options

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestParsePrecedence(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+
		"maxPods: 50\nport: 11250\ncgroupDriver: systemd\nsyncFrequency: 30s\nfeatureGates:\n  FromFile: true\n  Both: true\n")
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration)
	}{
		{
			name: "flag overrides the file value",
			args: []string{"--config", file, "--max-pods=70"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.MaxPods != 70 {
					t.Errorf("maxPods = %d, want 70 from the flag", c.MaxPods)
				}
			},
		},
		{
			name: "flag given before --config still wins",
			args: []string{"--max-pods=70", "--config=" + file},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.MaxPods != 70 {
					t.Errorf("maxPods = %d, want 70", c.MaxPods)
				}
			},
		},
		{
			name: "flags not given leave file values",
			args: []string{"--config", file, "--max-pods=70"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.Port != 11250 || c.CgroupDriver != "systemd" || c.SyncFrequency.Duration != 30*time.Second {
					t.Errorf("file values lost: port=%d cgroupDriver=%q syncFrequency=%s", c.Port, c.CgroupDriver, c.SyncFrequency.Duration)
				}
			},
		},
		{
			name: "file fields absent get v1beta1 defaults, not legacy ones",
			args: []string{"--config", file},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.ReadOnlyPort != 0 || c.Authorization.Mode != kubeletconfigv1beta1.KubeletAuthorizationModeWebhook ||
					*c.Authentication.Anonymous.Enabled || c.HealthzBindAddress != "127.0.0.1" || *c.RegistryPullQPS != 5 {
					t.Errorf("defaults not applied: readOnlyPort=%d mode=%s anonymous=%v healthzBindAddress=%q",
						c.ReadOnlyPort, c.Authorization.Mode, *c.Authentication.Anonymous.Enabled, c.HealthzBindAddress)
				}
			},
		},
		{
			name: "without --config the legacy defaults apply",
			args: []string{"--max-pods=70"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.ReadOnlyPort != 10255 || c.Authorization.Mode != kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow || c.MaxPods != 70 {
					t.Errorf("readOnlyPort=%d mode=%s maxPods=%d", c.ReadOnlyPort, c.Authorization.Mode, c.MaxPods)
				}
			},
		},
		{
			name: "feature gates from flags merge over the file per key",
			args: []string{"--config", file, "--feature-gates=Both=false,FromFlag=true"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				want := map[string]bool{"FromFile": true, "Both": false, "FromFlag": true}
				if !reflect.DeepEqual(c.FeatureGates, want) {
					t.Errorf("featureGates = %v, want %v", c.FeatureGates, want)
				}
			},
		},
		{
			name: "word separators are normalized",
			args: []string{"--config", file, "--max_pods=33"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.MaxPods != 33 {
					t.Errorf("maxPods = %d, want 33", c.MaxPods)
				}
			},
		},
		{
			name: "verbosity flags fill the logging configuration",
			args: []string{"--config", file, "-v=4", "--vmodule=foo=5"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.Logging.Verbosity != 4 || len(c.Logging.VModule) != 1 || c.Logging.VModule[0].FilePattern != "foo" || c.Logging.VModule[0].Verbosity != 5 {
					t.Errorf("logging = %+v", c.Logging)
				}
			},
		},
		{
			name: "boolean flags accept a bare name",
			args: []string{"--config", file, "--fail-swap-on=false", "--runonce"},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if *c.FailSwapOn || !c.RunOnce {
					t.Errorf("failSwapOn=%v runOnce=%v", *c.FailSwapOn, c.RunOnce)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o.Config)
		})
	}
}

func TestParseDropInDirectory(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "kubelet.yaml", header+"maxPods: 50\nport: 11250\n")
	dropins := t.TempDir()
	writeFile(t, dropins, "10-a.conf", header+"maxPods: 60\nclusterDomain: example.local\n")
	o, err := Parse([]string{"--config", file, "--config-dir", dropins, "--cluster-domain=flag.local"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.MaxPods != 60 || o.Config.Port != 11250 || o.Config.ClusterDomain != "flag.local" {
		t.Errorf("maxPods=%d port=%d clusterDomain=%q; want drop-in over file, flag over drop-in",
			o.Config.MaxPods, o.Config.Port, o.Config.ClusterDomain)
	}
}

func TestParseFlagValues(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, o *Options)
	}{
		{
			name: "manifest-url-header repeats and splits on commas",
			args: []string{"--manifest-url=http://example/pods", "--manifest-url-header=a:hello,b:again", "--manifest-url-header", "b:beautiful"},
			check: func(t *testing.T, o *Options) {
				want := map[string][]string{"a": {"hello"}, "b": {"again", "beautiful"}}
				if !reflect.DeepEqual(o.Config.StaticPodURLHeader, want) || o.Config.StaticPodURL != "http://example/pods" {
					t.Errorf("staticPodURLHeader = %v, want %v", o.Config.StaticPodURLHeader, want)
				}
			},
		},
		{
			name: "eviction-hard replaces the defaults",
			args: []string{"--eviction-hard=memory.available<1Gi,nodefs.available<5%"},
			check: func(t *testing.T, o *Options) {
				want := map[string]string{"memory.available": "1Gi", "nodefs.available": "5%"}
				if !reflect.DeepEqual(o.Config.EvictionHard, want) {
					t.Errorf("evictionHard = %v, want %v", o.Config.EvictionHard, want)
				}
			},
		},
		{
			name: "node labels, cluster dns and taints",
			args: []string{"--node-labels=a=1,b=2", "--cluster-dns=10.0.0.10,fd00::10", "--register-with-taints=k=v:NoSchedule,only:NoExecute"},
			check: func(t *testing.T, o *Options) {
				if !reflect.DeepEqual(o.Flags.NodeLabels, map[string]string{"a": "1", "b": "2"}) {
					t.Errorf("nodeLabels = %v", o.Flags.NodeLabels)
				}
				if !reflect.DeepEqual(o.Config.ClusterDNS, []string{"10.0.0.10", "fd00::10"}) {
					t.Errorf("clusterDNS = %v", o.Config.ClusterDNS)
				}
				want := []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}, {Key: "only", Effect: v1.TaintEffectNoExecute}}
				if !reflect.DeepEqual(o.Config.RegisterWithTaints, want) {
					t.Errorf("registerWithTaints = %v", o.Config.RegisterWithTaints)
				}
			},
		},
		{
			name: "reserved memory per NUMA node",
			args: []string{"--reserved-memory=0:memory=1Gi,hugepages-1M=2Gi", "--reserved-memory=1:memory=2Gi"},
			check: func(t *testing.T, o *Options) {
				r := o.Config.ReservedMemory
				if len(r) != 2 || r[0].NumaNode != 0 || r[1].NumaNode != 1 ||
					!r[0].Limits[v1.ResourceMemory].Equal(resource.MustParse("1Gi")) ||
					!r[0].Limits["hugepages-1M"].Equal(resource.MustParse("2Gi")) {
					t.Errorf("reservedMemory = %+v", r)
				}
			},
		},
		{
			name: "flag-only options",
			args: []string{"--kubeconfig=/k", "--bootstrap-kubeconfig=/b", "--hostname-override=Node1", "--node-ip=10.0.0.1",
				"--root-dir=/r", "--cert-dir=/c", "--lock-file=/l", "--exit-on-lock-contention"},
			check: func(t *testing.T, o *Options) {
				f := o.Flags
				if f.KubeConfig != "/k" || f.BootstrapKubeconfig != "/b" || f.HostnameOverride != "Node1" || f.NodeIP != "10.0.0.1" ||
					f.RootDirectory != "/r" || f.CertDirectory != "/c" || f.LockFilePath != "/l" || !f.ExitOnLockContention {
					t.Errorf("flags = %+v", f)
				}
			},
		},
		{
			name: "container GC flags",
			args: []string{"--minimum-container-ttl-duration=90s", "--maximum-dead-containers-per-container=3", "--maximum-dead-containers=20"},
			check: func(t *testing.T, o *Options) {
				f := o.Flags
				if f.MinimumGCAge != 90*time.Second || f.MaxPerPodContainerCount != 3 || f.MaxContainerCount != 20 {
					t.Errorf("flags = %+v", f)
				}
			},
		},
		{
			name: "flag-only defaults",
			args: nil,
			check: func(t *testing.T, o *Options) {
				if o.Flags.RootDirectory != "/var/lib/kubelet" || o.Flags.CertDirectory != "/var/lib/kubelet/pki" || o.Flags.KubeConfig != "" ||
					o.Flags.MinimumGCAge != 0 || o.Flags.MaxPerPodContainerCount != 1 || o.Flags.MaxContainerCount != -1 {
					t.Errorf("flags = %+v", o.Flags)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

func TestParseWarnings(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+"kubeletCgroups: /fromfile\ntopologyManagerScope: pod\nsyncFrequency: 20s\n")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{
			name: "unsupported flags warn once each, supported deprecated flags say so",
			args: []string{"--kubelet-cgroups=/a", "--kubelet-cgroups=/b", "--pod-infra-container-image=pause", "--max-pods=10"},
			want: []string{
				"flag --kubelet-cgroups is accepted for compatibility but not supported by this kubelet; it has no effect",
				"flag --max-pods has been deprecated: " + configDeprecation,
				"flag --pod-infra-container-image is accepted for compatibility but not supported by this kubelet; it has no effect",
			},
		},
		{
			name: "unsupported file fields warn; a field also set by a warned flag warns once",
			args: []string{"--config", file, "--kubelet-cgroups=/flag"},
			want: []string{
				"flag --kubelet-cgroups is accepted for compatibility but not supported by this kubelet; it has no effect",
				"configuration field topologyManagerScope is set but not supported by this kubelet; it has no effect",
			},
		},
		{
			name: "plain defaults produce no warnings",
			args: nil,
			want: nil,
		},
		{
			name: "current flags are not deprecated",
			args: []string{"-v=2", "--provider-id=x"},
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.Warnings, tc.want) {
				t.Errorf("warnings:\n got %q\nwant %q", o.Warnings, tc.want)
			}
		})
	}
}

func TestParseHelpVersionAndErrors(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr error
		want    string // substring of the error, or of VersionText
	}{
		{"long help", []string{"--help"}, ErrHelp, ""},
		{"short help", []string{"-h", "--max-pods=3"}, ErrHelp, ""},
		{"version", []string{"--version"}, ErrVersion, "Kubernetes v1.36.3"},
		{"raw version", []string{"--version=raw"}, ErrVersion, `GitVersion:"v1.36.3"`},
		{"unknown flag", []string{"--no-such-flag"}, nil, "unknown flag: --no-such-flag"},
		{"bad flag value", []string{"--max-pods=many"}, nil, "--max-pods"},
		{"bad address", []string{"--address=nowhere"}, nil, `"nowhere" is not a valid IP address`},
		{"bad taint", []string{"--register-with-taints=k=v:Sometimes"}, nil, `effect "Sometimes"`},
		{"positional argument", []string{"run"}, nil, `unknown command "run"`},
		{"missing config file", []string{"--config=/nonexistent/kubelet.yaml"}, nil, "failed to load kubelet config file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if tc.wantErr == ErrVersion && !strings.Contains(o.VersionText(), tc.want) {
					t.Errorf("VersionText() = %q, want it to contain %q", o.VersionText(), tc.want)
				}
				return
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestVersionTextMatchesUpstreamFormat(t *testing.T) {
	o := &Options{Flags: KubeletFlags{Version: "true"}}
	if got := o.VersionText(); got != "Kubernetes v1.36.3" || got != VersionString() {
		t.Errorf("VersionText() = %q, VersionString() = %q", got, VersionString())
	}
	info := VersionInfo()
	if info.Major != "1" || info.Minor != "36" || info.GoVersion != runtime.Version() {
		t.Errorf("VersionInfo() = %+v", info)
	}
}

func TestUsageListsFlags(t *testing.T) {
	u := Usage()
	for _, want := range []string{"Usage:\n  kubelet [flags]", "--config string", "--kubeconfig string", "-v, --v Level",
		"--container-runtime-endpoint string", "(DEPRECATED: " + configDeprecation + ")", "-h, --help"} {
		if !strings.Contains(u, want) {
			t.Errorf("usage lacks %q", want)
		}
	}
}

func TestApplyLogging(t *testing.T) {
	bad := NewDefaultConfig()
	bad.Logging.Format = "xml"
	if err := ApplyLogging(bad); err == nil || !strings.Contains(err.Error(), "logging.format") {
		t.Fatalf("ApplyLogging(format=xml) = %v, want a logging.format error", err)
	}
	o, err := Parse([]string{"-v=3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyLogging(o.Config); err != nil {
		t.Fatal(err)
	}
	if !klog.V(3).Enabled() || klog.V(4).Enabled() {
		t.Errorf("klog verbosity not 3: V(3)=%v V(4)=%v", klog.V(3).Enabled(), klog.V(4).Enabled())
	}
}
