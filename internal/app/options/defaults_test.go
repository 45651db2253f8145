package options

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

func TestSetDefaultsFillsEmptyConfig(t *testing.T) {
	c := &kubeletconfigv1beta1.KubeletConfiguration{}
	SetDefaults(c)
	cases := []struct {
		field string
		got   any
		want  any
	}{
		{"enableServer", *c.EnableServer, true},
		{"syncFrequency", c.SyncFrequency.Duration, time.Minute},
		{"fileCheckFrequency", c.FileCheckFrequency.Duration, 20 * time.Second},
		{"httpCheckFrequency", c.HTTPCheckFrequency.Duration, 20 * time.Second},
		{"address", c.Address, "0.0.0.0"},
		{"port", c.Port, int32(10250)},
		{"readOnlyPort", c.ReadOnlyPort, int32(0)},
		{"authentication.anonymous.enabled", *c.Authentication.Anonymous.Enabled, false},
		{"authentication.webhook.enabled", *c.Authentication.Webhook.Enabled, true},
		{"authentication.webhook.cacheTTL", c.Authentication.Webhook.CacheTTL.Duration, 2 * time.Minute},
		{"authorization.mode", c.Authorization.Mode, kubeletconfigv1beta1.KubeletAuthorizationModeWebhook},
		{"authorization.webhook.cacheAuthorizedTTL", c.Authorization.Webhook.CacheAuthorizedTTL.Duration, 5 * time.Minute},
		{"authorization.webhook.cacheUnauthorizedTTL", c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, 30 * time.Second},
		{"registryPullQPS", *c.RegistryPullQPS, int32(5)},
		{"registryBurst", c.RegistryBurst, int32(10)},
		{"eventRecordQPS", *c.EventRecordQPS, int32(50)},
		{"eventBurst", c.EventBurst, int32(100)},
		{"enableDebuggingHandlers", *c.EnableDebuggingHandlers, true},
		{"healthzPort", *c.HealthzPort, int32(10248)},
		{"healthzBindAddress", c.HealthzBindAddress, "127.0.0.1"},
		{"oomScoreAdj", *c.OOMScoreAdj, int32(-999)},
		{"streamingConnectionIdleTimeout", c.StreamingConnectionIdleTimeout.Duration, 4 * time.Hour},
		{"nodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency.Duration, 10 * time.Second},
		{"nodeStatusReportFrequency", c.NodeStatusReportFrequency.Duration, 5 * time.Minute},
		{"nodeLeaseDurationSeconds", c.NodeLeaseDurationSeconds, int32(40)},
		{"imageMinimumGCAge", c.ImageMinimumGCAge.Duration, 2 * time.Minute},
		{"imageMaximumGCAge", c.ImageMaximumGCAge.Duration, time.Duration(0)},
		{"imageGCHighThresholdPercent", *c.ImageGCHighThresholdPercent, int32(85)},
		{"imageGCLowThresholdPercent", *c.ImageGCLowThresholdPercent, int32(80)},
		{"volumeStatsAggPeriod", c.VolumeStatsAggPeriod.Duration, time.Minute},
		{"cgroupsPerQOS", *c.CgroupsPerQOS, true},
		{"cgroupDriver", c.CgroupDriver, "cgroupfs"},
		{"cgroupRoot", c.CgroupRoot, ""},
		{"cpuManagerPolicy", c.CPUManagerPolicy, "none"},
		{"cpuManagerReconcilePeriod", c.CPUManagerReconcilePeriod.Duration, 10 * time.Second},
		{"memoryManagerPolicy", c.MemoryManagerPolicy, "None"},
		{"topologyManagerPolicy", c.TopologyManagerPolicy, "none"},
		{"topologyManagerScope", c.TopologyManagerScope, "container"},
		{"runtimeRequestTimeout", c.RuntimeRequestTimeout.Duration, 2 * time.Minute},
		{"hairpinMode", c.HairpinMode, "promiscuous-bridge"},
		{"maxPods", c.MaxPods, int32(110)},
		{"podPidsLimit", *c.PodPidsLimit, int64(-1)},
		{"resolvConf", *c.ResolverConfig, "/etc/resolv.conf"},
		{"cpuCFSQuota", *c.CPUCFSQuota, true},
		{"cpuCFSQuotaPeriod", c.CPUCFSQuotaPeriod.Duration, 100 * time.Millisecond},
		{"nodeStatusMaxImages", *c.NodeStatusMaxImages, int32(50)},
		{"maxOpenFiles", c.MaxOpenFiles, int64(1000000)},
		{"contentType", c.ContentType, "application/vnd.kubernetes.protobuf"},
		{"kubeAPIQPS", *c.KubeAPIQPS, int32(50)},
		{"kubeAPIBurst", c.KubeAPIBurst, int32(100)},
		{"serializeImagePulls", *c.SerializeImagePulls, true},
		{"maxParallelImagePulls", c.MaxParallelImagePulls, (*int32)(nil)},
		{"evictionHard", c.EvictionHard, map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}},
		{"evictionPressureTransitionPeriod", c.EvictionPressureTransitionPeriod.Duration, 5 * time.Minute},
		{"mergeDefaultEvictionSettings", *c.MergeDefaultEvictionSettings, false},
		{"enableControllerAttachDetach", *c.EnableControllerAttachDetach, true},
		{"makeIPTablesUtilChains", *c.MakeIPTablesUtilChains, true},
		{"iptablesMasqueradeBit", *c.IPTablesMasqueradeBit, int32(14)},
		{"iptablesDropBit", *c.IPTablesDropBit, int32(15)},
		{"failSwapOn", *c.FailSwapOn, true},
		{"containerLogMaxSize", c.ContainerLogMaxSize, "10Mi"},
		{"containerLogMaxFiles", *c.ContainerLogMaxFiles, int32(5)},
		{"containerLogMaxWorkers", *c.ContainerLogMaxWorkers, int32(1)},
		{"containerLogMonitorInterval", c.ContainerLogMonitorInterval.Duration, 10 * time.Second},
		{"configMapAndSecretChangeDetectionStrategy", c.ConfigMapAndSecretChangeDetectionStrategy, kubeletconfigv1beta1.WatchChangeDetectionStrategy},
		{"enforceNodeAllocatable", c.EnforceNodeAllocatable, []string{"pods"}},
		{"volumePluginDir", c.VolumePluginDir, "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"},
		{"logging.format", c.Logging.Format, "text"},
		{"logging.flushFrequency", c.Logging.FlushFrequency.Duration.Duration, 5 * time.Second},
		{"enableSystemLogHandler", *c.EnableSystemLogHandler, true},
		{"enableProfilingHandler", *c.EnableProfilingHandler, true},
		{"enableDebugFlagsHandler", *c.EnableDebugFlagsHandler, true},
		{"seccompDefault", *c.SeccompDefault, false},
		{"failCgroupV1", *c.FailCgroupV1, true},
		{"memoryThrottlingFactor", *c.MemoryThrottlingFactor, 0.9},
		{"memoryReservationPolicy", c.MemoryReservationPolicy, kubeletconfigv1beta1.NoneMemoryReservationPolicy},
		{"registerNode", *c.RegisterNode, true},
		{"localStorageCapacityIsolation", *c.LocalStorageCapacityIsolation, true},
		{"containerRuntimeEndpoint", c.ContainerRuntimeEndpoint, "unix:///run/containerd/containerd.sock"},
		{"podLogsDir", c.PodLogsDir, "/var/log/pods"},
		{"crashLoopBackOff.maxContainerRestartPeriod", c.CrashLoopBackOff.MaxContainerRestartPeriod.Duration, 300 * time.Second},
		{"imagePullCredentialsVerificationPolicy", c.ImagePullCredentialsVerificationPolicy, kubeletconfigv1beta1.NeverVerifyPreloadedImages},
		{"staticPodPath", c.StaticPodPath, ""},
		{"evictionSoft", c.EvictionSoft, map[string]string(nil)},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("%s = %#v, want %#v", tc.field, tc.got, tc.want)
			}
		})
	}
}

func TestSetDefaultsKeepsSetValuesAndDerives(t *testing.T) {
	cases := []struct {
		name  string
		in    kubeletconfigv1beta1.KubeletConfiguration
		check func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration)
	}{
		{
			name: "explicit values survive, including false and 0 behind pointers",
			in: kubeletconfigv1beta1.KubeletConfiguration{
				Port: 11250, FailSwapOn: ptr.To(false), HealthzPort: ptr.To[int32](0), RegistryPullQPS: ptr.To[int32](0), CgroupDriver: "systemd",
			},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.Port != 11250 || *c.FailSwapOn || *c.HealthzPort != 0 || *c.RegistryPullQPS != 0 || c.CgroupDriver != "systemd" {
					t.Errorf("set values overwritten: port=%d failSwapOn=%v healthzPort=%d registryPullQPS=%d cgroupDriver=%q",
						c.Port, *c.FailSwapOn, *c.HealthzPort, *c.RegistryPullQPS, c.CgroupDriver)
				}
			},
		},
		{
			name: "report frequency follows an explicit update frequency",
			in:   kubeletconfigv1beta1.KubeletConfiguration{NodeStatusUpdateFrequency: metav1.Duration{Duration: 20 * time.Second}},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.NodeStatusReportFrequency.Duration != 20*time.Second {
					t.Errorf("nodeStatusReportFrequency = %s, want 20s", c.NodeStatusReportFrequency.Duration)
				}
			},
		},
		{
			name: "parallel pulls requested turn serialized pulls off",
			in:   kubeletconfigv1beta1.KubeletConfiguration{MaxParallelImagePulls: ptr.To[int32](5)},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if *c.SerializeImagePulls {
					t.Error("serializeImagePulls = true, want false")
				}
			},
		},
		{
			name: "negative pid limit becomes -1",
			in:   kubeletconfigv1beta1.KubeletConfiguration{PodPidsLimit: ptr.To[int64](-7)},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if *c.PodPidsLimit != -1 {
					t.Errorf("podPidsLimit = %d, want -1", *c.PodPidsLimit)
				}
			},
		},
		{
			name: "evictionHard set without merge keeps only the given signal",
			in:   kubeletconfigv1beta1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "1Gi"}},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if !reflect.DeepEqual(c.EvictionHard, map[string]string{"memory.available": "1Gi"}) {
					t.Errorf("evictionHard = %v", c.EvictionHard)
				}
			},
		},
		{
			name: "evictionHard with mergeDefaultEvictionSettings inherits missing signals",
			in: kubeletconfigv1beta1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "1Gi"},
				MergeDefaultEvictionSettings: ptr.To(true)},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.EvictionHard["memory.available"] != "1Gi" || c.EvictionHard["nodefs.available"] != "10%" || len(c.EvictionHard) != 5 {
					t.Errorf("evictionHard = %v", c.EvictionHard)
				}
			},
		},
		{
			name: "an empty evictionHard map disables hard eviction",
			in:   kubeletconfigv1beta1.KubeletConfiguration{EvictionHard: map[string]string{}},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if len(c.EvictionHard) != 0 {
					t.Errorf("evictionHard = %v, want empty", c.EvictionHard)
				}
			},
		},
		{
			name: "feature gates switched off skip their defaults",
			in: kubeletconfigv1beta1.KubeletConfiguration{FeatureGates: map[string]bool{
				"KubeletCrashLoopBackOffMax": false, "KubeletEnsureSecretPulledImages": false}},
			check: func(t *testing.T, c *kubeletconfigv1beta1.KubeletConfiguration) {
				if c.CrashLoopBackOff.MaxContainerRestartPeriod != nil || c.ImagePullCredentialsVerificationPolicy != "" {
					t.Errorf("gated defaults applied: %v %q", c.CrashLoopBackOff.MaxContainerRestartPeriod, c.ImagePullCredentialsVerificationPolicy)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.in
			SetDefaults(&c)
			tc.check(t, &c)
		})
	}
}

func TestSetDefaultsIsIdempotentAndDoesNotShareDefaults(t *testing.T) {
	a, b := &kubeletconfigv1beta1.KubeletConfiguration{}, &kubeletconfigv1beta1.KubeletConfiguration{}
	SetDefaults(a)
	SetDefaults(b)
	a.EvictionHard["memory.available"] = "9Gi"
	if b.EvictionHard["memory.available"] != "100Mi" {
		t.Fatal("two defaulted configs share the evictionHard map")
	}
	again := b.DeepCopy()
	SetDefaults(again)
	if !reflect.DeepEqual(again, b) {
		t.Error("SetDefaults is not idempotent")
	}
}

func TestNewDefaultConfigUsesLegacyCommandLineDefaults(t *testing.T) {
	c := NewDefaultConfig()
	if !*c.Authentication.Anonymous.Enabled || *c.Authentication.Webhook.Enabled ||
		c.Authorization.Mode != kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow || c.ReadOnlyPort != 10255 {
		t.Errorf("legacy defaults not applied: anonymous=%v webhook=%v mode=%s readOnlyPort=%d",
			*c.Authentication.Anonymous.Enabled, *c.Authentication.Webhook.Enabled, c.Authorization.Mode, c.ReadOnlyPort)
	}
}
