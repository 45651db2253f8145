package options

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func validOptions() *Options {
	c := &kubeletconfigv1beta1.KubeletConfiguration{}
	SetDefaults(c)
	return &Options{Flags: *NewKubeletFlags(), Config: c}
}

func TestValidateAcceptsDefaults(t *testing.T) {
	if err := Validate(validOptions()); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	legacy := validOptions()
	legacy.Config = NewDefaultConfig()
	if err := Validate(legacy); err != nil {
		t.Fatalf("legacy defaults rejected: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(o *Options)
		want   string // one full line or a distinctive part of it
	}{
		{"image GC high above 100", func(o *Options) { o.Config.ImageGCHighThresholdPercent = ptr.To[int32](150) },
			"invalid configuration: imageGCHighThresholdPercent: Invalid value: 150: must be between 0 and 100, inclusive"},
		{"image GC low not below high", func(o *Options) { o.Config.ImageGCLowThresholdPercent = ptr.To[int32](90) },
			"invalid configuration: imageGCLowThresholdPercent: Invalid value: 90: must be less than imageGCHighThresholdPercent (85)"},
		{"port zero", func(o *Options) { o.Config.Port = 0 },
			"invalid configuration: port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"read-only port too large", func(o *Options) { o.Config.ReadOnlyPort = 70000 },
			"invalid configuration: readOnlyPort: Invalid value: 70000: must be between 0 and 65535, inclusive"},
		{"healthz port negative", func(o *Options) { o.Config.HealthzPort = ptr.To[int32](-1) },
			"healthzPort: Invalid value: -1"},
		{"unknown cgroup driver", func(o *Options) { o.Config.CgroupDriver = "cgroupfs2" },
			`invalid configuration: cgroupDriver: Unsupported value: "cgroupfs2": supported values: "cgroupfs", "systemd"`},
		{"lease duration zero", func(o *Options) { o.Config.NodeLeaseDurationSeconds = 0 },
			"nodeLeaseDurationSeconds: Invalid value: 0: must be greater than 0"},
		{"negative max pods", func(o *Options) { o.Config.MaxPods = -1 },
			"maxPods: Invalid value: -1: must not be negative"},
		{"negative sync frequency", func(o *Options) { o.Config.SyncFrequency.Duration = -time.Second },
			`syncFrequency: Invalid value: "-1s": must be greater than 0`},
		{"negative registry QPS", func(o *Options) { o.Config.RegistryPullQPS = ptr.To[int32](-1) },
			"registryPullQPS: Invalid value: -1: must not be negative"},
		{"oom score out of range", func(o *Options) { o.Config.OOMScoreAdj = ptr.To[int32](-1001) },
			"oomScoreAdj: Invalid value: -1001: must be between -1000 and 1000, inclusive"},
		{"parallel pulls while serialized", func(o *Options) { o.Config.MaxParallelImagePulls = ptr.To[int32](3) },
			"maxParallelImagePulls: Invalid value: 3: must be 1 unless serializeImagePulls is false"},
		{"unknown eviction signal", func(o *Options) { o.Config.EvictionHard["memory.free"] = "1Gi" },
			`evictionHard[memory.free]: Unsupported value: "memory.free"`},
		{"bad eviction quantity", func(o *Options) { o.Config.EvictionHard["memory.available"] = "lots" },
			`evictionHard[memory.available]: Invalid value: "lots": must be a quantity or a percentage`},
		{"eviction percentage over 100", func(o *Options) { o.Config.EvictionHard["nodefs.available"] = "120%" },
			`evictionHard[nodefs.available]: Invalid value: "120%": percentage must be between 0% and 100%, inclusive`},
		{"soft eviction without grace period", func(o *Options) { o.Config.EvictionSoft = map[string]string{"memory.available": "1Gi"} },
			"evictionSoftGracePeriod[memory.available]: Required value"},
		{"unknown reserved resource", func(o *Options) { o.Config.SystemReserved = map[string]string{"gpu": "1"} },
			`systemReserved[gpu]: Unsupported value: "gpu"`},
		{"bad hairpin mode", func(o *Options) { o.Config.HairpinMode = "sideways" },
			`hairpinMode: Unsupported value: "sideways"`},
		{"bad authorization mode", func(o *Options) { o.Config.Authorization.Mode = "RBAC" },
			`authorization.mode: Unsupported value: "RBAC"`},
		{"bad address", func(o *Options) { o.Config.Address = "localhost" },
			`address: Invalid value: "localhost": must be a valid IP address`},
		{"empty runtime endpoint", func(o *Options) { o.Config.ContainerRuntimeEndpoint = "" },
			"containerRuntimeEndpoint: Required value"},
		{"relative pod logs dir", func(o *Options) { o.Config.PodLogsDir = "logs" },
			`podLogsDir: Invalid value: "logs": must be an absolute path`},
		{"bad taint effect", func(o *Options) {
			o.Config.RegisterWithTaints = []v1.Taint{{Key: "k", Effect: "Sometimes"}}
		}, `registerWithTaints[0].effect: Unsupported value: "Sometimes"`},
		{"reserved CPUs unparsable", func(o *Options) { o.Config.ReservedSystemCPUs = "a-b" },
			`reservedSystemCPUs: Invalid value: "a-b"`},
		{"enforce node allocatable needs cgroup", func(o *Options) { o.Config.EnforceNodeAllocatable = []string{"pods", "kube-reserved"} },
			`enforceNodeAllocatable[1]: Invalid value: "kube-reserved": requires kubeReservedCgroup to be set`},
		{"critical shutdown period above total", func(o *Options) {
			o.Config.ShutdownGracePeriodCriticalPods.Duration = time.Minute
		}, "shutdownGracePeriodCriticalPods"},
		{"logging format unknown", func(o *Options) { o.Config.Logging.Format = "xml" },
			`logging.format: Invalid value: "xml": Unsupported log format`},
		{"node-role label not allowed from the kubelet", func(o *Options) { o.Flags.NodeLabels = map[string]string{"node-role.kubernetes.io/worker": ""} },
			`invalid flags: --node-labels[node-role.kubernetes.io/worker]: Invalid value: "node-role.kubernetes.io/worker": labels in the kubernetes.io and k8s.io namespaces`},
		{"invalid node label value", func(o *Options) { o.Flags.NodeLabels = map[string]string{"team": "a b"} },
			`invalid flags: --node-labels[team]: Invalid value: "a b"`},
		{"two IPv4 node IPs", func(o *Options) { o.Flags.NodeIP = "10.0.0.1,10.0.0.2" },
			`--node-ip: Invalid value: "10.0.0.1,10.0.0.2": a pair must hold one IPv4 and one IPv6 address`},
		{"exit on contention without lock file", func(o *Options) { o.Flags.ExitOnLockContention = true },
			"--lock-file: Required value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions()
			tc.mutate(o)
			err := Validate(o)
			if err == nil {
				t.Fatal("Validate succeeded, want error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not match ErrInvalid")
			}
			var found bool
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Contains(line, tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no line contains %q in:\n%s", tc.want, err)
			}
		})
	}
}

func TestValidateReportsAllProblems(t *testing.T) {
	o := validOptions()
	o.Config.Port = 0
	o.Config.MaxPods = -5
	o.Config.CgroupDriver = "none"
	err := Validate(o)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	if len(verr.Lines) != 3 {
		t.Errorf("got %d lines, want 3:\n%s", len(verr.Lines), err)
	}
	for _, line := range verr.Lines {
		if !strings.HasPrefix(line, "invalid configuration: ") {
			t.Errorf("line %q lacks the prefix", line)
		}
	}
}

func TestValidateAcceptsGoodValues(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(o *Options)
	}{
		{"systemd driver", func(o *Options) { o.Config.CgroupDriver = "systemd" }},
		{"parallel pulls with serialization off", func(o *Options) {
			o.Config.MaxParallelImagePulls = ptr.To[int32](4)
			o.Config.SerializeImagePulls = ptr.To(false)
		}},
		{"soft eviction with grace period", func(o *Options) {
			o.Config.EvictionSoft = map[string]string{"memory.available": "1.5Gi"}
			o.Config.EvictionSoftGracePeriod = map[string]string{"memory.available": "1m30s"}
		}},
		{"allowed kubelet node labels", func(o *Options) {
			o.Flags.NodeLabels = map[string]string{"node.kubernetes.io/pool": "", "topology.kubernetes.io/zone": "a", "team": "x"}
		}},
		{"dual-stack node IP", func(o *Options) { o.Flags.NodeIP = "10.0.0.1,fd00::1" }},
		{"unspecified IPv6 node IP", func(o *Options) { o.Flags.NodeIP = "::" }},
		{"taints", func(o *Options) {
			o.Config.RegisterWithTaints = []v1.Taint{{Key: "example.com/dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}
		}},
		{"ports disabled", func(o *Options) { o.Config.ReadOnlyPort = 0; o.Config.HealthzPort = ptr.To[int32](0) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions()
			tc.mutate(o)
			if err := Validate(o); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}
