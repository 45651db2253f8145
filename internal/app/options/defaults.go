package options

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

// Upstream default values that other packages may want to refer to.
const (
	DefaultKubeletPort          = 10250
	DefaultReadOnlyPort         = 10255 // only the legacy (no --config) default
	DefaultHealthzPort          = 10248
	DefaultOOMScoreAdj          = -999
	DefaultPodLogsDir           = "/var/log/pods"
	DefaultVolumePluginDir      = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
	DefaultResolvConf           = "/etc/resolv.conf"
	DefaultRuntimeEndpoint      = "unix:///run/containerd/containerd.sock"
	DefaultMaxContainerRestart  = 300 * time.Second
	defaultMemoryThrottleFactor = 0.9
	defaultIPTablesMasqBit      = 14
	defaultIPTablesDropBit      = 15
)

// DefaultEvictionHard returns the Linux hard eviction thresholds used when
// evictionHard is not set (a fresh map each call).
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// featureDefaults are the v1.36 defaults of the feature gates that change
// configuration defaults.
var featureDefaults = map[string]bool{
	"KubeletCrashLoopBackOffMax":      true,
	"KubeletEnsureSecretPulledImages": true,
}

func featureEnabled(c *kubeletconfigv1beta1.KubeletConfiguration, name string) bool {
	if v, ok := c.FeatureGates[name]; ok {
		return v
	}
	return featureDefaults[name]
}

// SetDefaults fills every unset field of c with the upstream v1beta1 default
// for v1.36, the same way a config file is defaulted when it is loaded. It
// never overwrites a value that is set.
func SetDefaults(c *kubeletconfigv1beta1.KubeletConfiguration) {
	dur := func(p *metav1.Duration, d time.Duration) {
		if p.Duration == 0 {
			p.Duration = d
		}
	}
	str := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	i32 := func(p *int32, v int32) {
		if *p == 0 {
			*p = v
		}
	}
	setPtr(&c.EnableServer, true)
	dur(&c.SyncFrequency, time.Minute)
	dur(&c.FileCheckFrequency, 20*time.Second)
	dur(&c.HTTPCheckFrequency, 20*time.Second)
	str(&c.Address, "0.0.0.0")
	i32(&c.Port, DefaultKubeletPort)

	setPtr(&c.Authentication.Anonymous.Enabled, false)
	setPtr(&c.Authentication.Webhook.Enabled, true)
	dur(&c.Authentication.Webhook.CacheTTL, 2*time.Minute)
	if c.Authorization.Mode == "" {
		c.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeWebhook
	}
	dur(&c.Authorization.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	dur(&c.Authorization.Webhook.CacheUnauthorizedTTL, 30*time.Second)

	setPtr(&c.RegistryPullQPS, int32(5))
	i32(&c.RegistryBurst, 10)
	setPtr(&c.EventRecordQPS, int32(50))
	i32(&c.EventBurst, 100)
	setPtr(&c.EnableDebuggingHandlers, true)
	setPtr(&c.HealthzPort, int32(DefaultHealthzPort))
	str(&c.HealthzBindAddress, "127.0.0.1")
	setPtr(&c.OOMScoreAdj, int32(DefaultOOMScoreAdj))
	dur(&c.StreamingConnectionIdleTimeout, 4*time.Hour)
	// nodeStatusReportFrequency follows an explicitly set update frequency.
	if c.NodeStatusReportFrequency.Duration == 0 {
		if c.NodeStatusUpdateFrequency.Duration != 0 {
			c.NodeStatusReportFrequency = c.NodeStatusUpdateFrequency
		} else {
			c.NodeStatusReportFrequency.Duration = 5 * time.Minute
		}
	}
	dur(&c.NodeStatusUpdateFrequency, 10*time.Second)
	i32(&c.NodeLeaseDurationSeconds, 40)
	dur(&c.ImageMinimumGCAge, 2*time.Minute)
	setPtr(&c.ImageGCHighThresholdPercent, int32(85))
	setPtr(&c.ImageGCLowThresholdPercent, int32(80))
	dur(&c.VolumeStatsAggPeriod, time.Minute)
	setPtr(&c.CgroupsPerQOS, true)
	str(&c.CgroupDriver, "cgroupfs")
	str(&c.CPUManagerPolicy, "none")
	dur(&c.CPUManagerReconcilePeriod, 10*time.Second)
	str(&c.MemoryManagerPolicy, kubeletconfigv1beta1.NoneMemoryManagerPolicy)
	str(&c.TopologyManagerPolicy, kubeletconfigv1beta1.NoneTopologyManagerPolicy)
	str(&c.TopologyManagerScope, kubeletconfigv1beta1.ContainerTopologyManagerScope)
	dur(&c.RuntimeRequestTimeout, 2*time.Minute)
	str(&c.HairpinMode, kubeletconfigv1beta1.PromiscuousBridge)
	i32(&c.MaxPods, 110)
	// A negative limit means "node allocatable", spelled -1.
	if c.PodPidsLimit == nil || *c.PodPidsLimit < 0 {
		c.PodPidsLimit = ptr.To[int64](-1)
	}
	setPtr(&c.ResolverConfig, DefaultResolvConf)
	setPtr(&c.CPUCFSQuota, true)
	if c.CPUCFSQuotaPeriod == nil {
		c.CPUCFSQuotaPeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
	}
	setPtr(&c.NodeStatusMaxImages, int32(50))
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = 1000000
	}
	str(&c.ContentType, "application/vnd.kubernetes.protobuf")
	setPtr(&c.KubeAPIQPS, int32(50))
	i32(&c.KubeAPIBurst, 100)
	// Parallel pulls requested explicitly imply non-serialized pulls.
	if c.SerializeImagePulls == nil {
		parallel := c.MaxParallelImagePulls != nil && *c.MaxParallelImagePulls >= 2
		c.SerializeImagePulls = ptr.To(!parallel)
	}
	setPtr(&c.MergeDefaultEvictionSettings, false)
	defaultEviction(c)
	dur(&c.EvictionPressureTransitionPeriod, 5*time.Minute)
	setPtr(&c.EnableControllerAttachDetach, true)
	setPtr(&c.MakeIPTablesUtilChains, true)
	setPtr(&c.IPTablesMasqueradeBit, int32(defaultIPTablesMasqBit))
	setPtr(&c.IPTablesDropBit, int32(defaultIPTablesDropBit))
	setPtr(&c.FailSwapOn, true)
	str(&c.ContainerLogMaxSize, "10Mi")
	setPtr(&c.ContainerLogMaxFiles, int32(5))
	setPtr(&c.ContainerLogMaxWorkers, int32(1))
	if c.ContainerLogMonitorInterval == nil {
		c.ContainerLogMonitorInterval = &metav1.Duration{Duration: 10 * time.Second}
	}
	if c.ConfigMapAndSecretChangeDetectionStrategy == "" {
		c.ConfigMapAndSecretChangeDetectionStrategy = kubeletconfigv1beta1.WatchChangeDetectionStrategy
	}
	if c.EnforceNodeAllocatable == nil {
		c.EnforceNodeAllocatable = []string{"pods"}
	}
	str(&c.VolumePluginDir, DefaultVolumePluginDir)
	logsapi.SetRecommendedLoggingConfiguration(&c.Logging)
	setPtr(&c.EnableSystemLogHandler, true)
	setPtr(&c.EnableProfilingHandler, true)
	setPtr(&c.EnableDebugFlagsHandler, true)
	setPtr(&c.SeccompDefault, false)
	setPtr(&c.FailCgroupV1, true)
	setPtr(&c.MemoryThrottlingFactor, defaultMemoryThrottleFactor)
	if c.MemoryReservationPolicy == "" {
		c.MemoryReservationPolicy = kubeletconfigv1beta1.NoneMemoryReservationPolicy
	}
	setPtr(&c.RegisterNode, true)
	setPtr(&c.LocalStorageCapacityIsolation, true)
	str(&c.ContainerRuntimeEndpoint, DefaultRuntimeEndpoint)
	str(&c.PodLogsDir, DefaultPodLogsDir)

	if featureEnabled(c, "KubeletCrashLoopBackOffMax") && c.CrashLoopBackOff.MaxContainerRestartPeriod == nil {
		c.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: DefaultMaxContainerRestart}
	}
	if featureEnabled(c, "KubeletEnsureSecretPulledImages") && c.ImagePullCredentialsVerificationPolicy == "" {
		c.ImagePullCredentialsVerificationPolicy = kubeletconfigv1beta1.NeverVerifyPreloadedImages
	}
}

// defaultEviction applies the hard eviction defaults: all of them when
// evictionHard is unset, or the missing signals when
// mergeDefaultEvictionSettings is true.
func defaultEviction(c *kubeletconfigv1beta1.KubeletConfiguration) {
	if c.EvictionHard == nil {
		c.EvictionHard = DefaultEvictionHard()
		return
	}
	if c.MergeDefaultEvictionSettings == nil || !*c.MergeDefaultEvictionSettings {
		return
	}
	for signal, threshold := range DefaultEvictionHard() {
		if _, set := c.EvictionHard[signal]; !set {
			c.EvictionHard[signal] = threshold
		}
	}
}

// applyLegacyDefaults switches the defaults that differ when the kubelet runs
// without --config: the command line historically allowed anonymous,
// unauthorized access and served the read-only port.
func applyLegacyDefaults(c *kubeletconfigv1beta1.KubeletConfiguration) {
	c.Authentication.Anonymous.Enabled = ptr.To(true)
	c.Authentication.Webhook.Enabled = ptr.To(false)
	c.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	c.ReadOnlyPort = DefaultReadOnlyPort
}

// NewDefaultConfig returns the configuration used when no --config is given.
func NewDefaultConfig() *kubeletconfigv1beta1.KubeletConfiguration {
	c := &kubeletconfigv1beta1.KubeletConfiguration{}
	SetDefaults(c)
	applyLegacyDefaults(c)
	return c
}

func setPtr[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}
