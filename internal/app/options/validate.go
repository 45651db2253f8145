package options

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/cpuset"

	"github.com/seed-kubelet/kubelet/internal/node/eviction/evictionapi"
)

// ErrInvalid classifies the error returned by Validate.
var ErrInvalid = errors.New("invalid kubelet options")

// ValidationError carries every problem Validate found, one line each.
type ValidationError struct {
	Lines []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Lines, "\n") }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Validate checks the flags and the (defaulted) configuration like upstream's
// validation and returns all problems at once as a *ValidationError whose
// lines read "invalid configuration: <field>: Invalid value: <v>: <allowed>".
func Validate(o *Options) error {
	if o == nil || o.Config == nil {
		return &ValidationError{Lines: []string{"invalid configuration: no configuration"}}
	}
	var lines []string
	for _, e := range validateFlags(&o.Flags) {
		lines = append(lines, "invalid flags: "+e.Error())
	}
	for _, e := range validateConfig(o.Config) {
		lines = append(lines, "invalid configuration: "+e.Error())
	}
	if len(lines) == 0 {
		return nil
	}
	return &ValidationError{Lines: lines}
}

func validateFlags(f *KubeletFlags) field.ErrorList {
	var errs field.ErrorList
	labels := field.NewPath("--node-labels")
	keys := make([]string, 0, len(f.NodeLabels))
	for k := range f.NodeLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := f.NodeLabels[k]
		if isKubernetesLabel(k) && !kubeletapis.IsKubeletLabel(k) {
			errs = append(errs, field.Invalid(labels.Key(k), k, fmt.Sprintf(
				"labels in the kubernetes.io and k8s.io namespaces must begin with an allowed prefix (%s) or be one of (%s)",
				strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))))
		}
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(labels.Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(labels.Key(k), v, msg))
		}
	}
	if f.NodeIP != "" {
		if msg := checkNodeIP(f.NodeIP); msg != "" {
			errs = append(errs, field.Invalid(field.NewPath("--node-ip"), f.NodeIP, msg))
		}
	}
	if f.LocalObjectsDir != "" && f.KubeConfig != "" {
		errs = append(errs, field.Invalid(field.NewPath("--local-objects-dir"), f.LocalObjectsDir, "local ConfigMaps and Secrets are for standalone mode only (no --kubeconfig): in a cluster they come from the API server"))
	}
	if f.LocalAPIAddress != "" {
		path := field.NewPath("--local-api-address")
		if f.KubeConfig != "" {
			errs = append(errs, field.Invalid(path, f.LocalAPIAddress, "the local API is for standalone mode only (no --kubeconfig): in a cluster kubectl talks to the API server"))
		}
		if _, port, err := net.SplitHostPort(f.LocalAPIAddress); err != nil || port == "" {
			errs = append(errs, field.Invalid(path, f.LocalAPIAddress, "must be host:port, e.g. 127.0.0.1:10260"))
		}
	}
	if f.ExitOnLockContention && f.LockFilePath == "" {
		errs = append(errs, field.Required(field.NewPath("--lock-file"), "needed by --exit-on-lock-contention"))
	}
	return errs
}

func isKubernetesLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") ||
		ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// checkNodeIP accepts one IP, or an IPv4 and an IPv6 address.
func checkNodeIP(s string) string {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return "must be one IP or a dual-stack pair"
	}
	var v4, v6 int
	for _, p := range parts {
		ip := net.ParseIP(strings.TrimSpace(p))
		if ip == nil {
			return "must be an IP address or a comma-separated IPv4,IPv6 pair"
		}
		if ip.To4() != nil {
			v4++
		} else {
			v6++
		}
	}
	if len(parts) == 2 {
		if v4 != 1 || v6 != 1 {
			return "a pair must hold one IPv4 and one IPv6 address"
		}
		for _, p := range parts {
			if ip := net.ParseIP(strings.TrimSpace(p)); ip.IsUnspecified() {
				return "a dual-stack pair must not contain an unspecified address"
			}
		}
	}
	return ""
}

// validator accumulates field errors on top-level JSON paths.
type validator struct{ errs field.ErrorList }

func (v *validator) invalid(path *field.Path, value any, detail string) {
	v.errs = append(v.errs, field.Invalid(path, value, detail))
}

func (v *validator) inRange(name string, value, lo, hi int64) {
	if value < lo || value > hi {
		v.invalid(field.NewPath(name), value, fmt.Sprintf("must be between %d and %d, inclusive", lo, hi))
	}
}

func (v *validator) nonNegative(name string, value int64) {
	if value < 0 {
		v.invalid(field.NewPath(name), value, "must not be negative")
	}
}

func (v *validator) positiveDuration(name string, d time.Duration) {
	if d <= 0 {
		v.invalid(field.NewPath(name), d.String(), "must be greater than 0")
	}
}

func (v *validator) oneOf(name string, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	v.errs = append(v.errs, field.NotSupported(field.NewPath(name), value, allowed))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// validateConfig checks a defaulted configuration.
func validateConfig(c *kubeletconfigv1beta1.KubeletConfiguration) field.ErrorList {
	v := &validator{}
	v.positiveDuration("syncFrequency", c.SyncFrequency.Duration)
	v.positiveDuration("fileCheckFrequency", c.FileCheckFrequency.Duration)
	v.positiveDuration("httpCheckFrequency", c.HTTPCheckFrequency.Duration)
	v.positiveDuration("nodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency.Duration)
	v.positiveDuration("nodeStatusReportFrequency", c.NodeStatusReportFrequency.Duration)
	v.positiveDuration("runtimeRequestTimeout", c.RuntimeRequestTimeout.Duration)
	if c.StreamingConnectionIdleTimeout.Duration < 0 {
		v.invalid(field.NewPath("streamingConnectionIdleTimeout"), c.StreamingConnectionIdleTimeout.Duration.String(), "must not be negative")
	}
	if c.NodeLeaseDurationSeconds <= 0 {
		v.invalid(field.NewPath("nodeLeaseDurationSeconds"), c.NodeLeaseDurationSeconds, "must be greater than 0")
	}

	for _, a := range []struct{ name, addr string }{{"address", c.Address}, {"healthzBindAddress", c.HealthzBindAddress}} {
		if net.ParseIP(a.addr) == nil {
			v.invalid(field.NewPath(a.name), a.addr, "must be a valid IP address")
		}
	}
	v.inRange("port", int64(c.Port), 1, 65535)
	v.inRange("readOnlyPort", int64(c.ReadOnlyPort), 0, 65535)
	v.inRange("healthzPort", int64(deref(c.HealthzPort)), 0, 65535)
	v.oneOf("authorization.mode", string(c.Authorization.Mode),
		string(kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow), string(kubeletconfigv1beta1.KubeletAuthorizationModeWebhook))
	if _, err := cliflag.TLSVersion(c.TLSMinVersion); err != nil {
		v.invalid(field.NewPath("tlsMinVersion"), c.TLSMinVersion, fmt.Sprintf("must be one of %s", strings.Join(cliflag.TLSPossibleVersions(), ", ")))
	}
	if _, err := cliflag.TLSCipherSuites(c.TLSCipherSuites); err != nil {
		v.invalid(field.NewPath("tlsCipherSuites"), strings.Join(c.TLSCipherSuites, ","), err.Error())
	}

	v.nonNegative("eventRecordQPS", int64(deref(c.EventRecordQPS)))
	v.nonNegative("eventBurst", int64(c.EventBurst))
	v.nonNegative("registryPullQPS", int64(deref(c.RegistryPullQPS)))
	v.nonNegative("registryBurst", int64(c.RegistryBurst))
	v.nonNegative("kubeAPIQPS", int64(deref(c.KubeAPIQPS)))
	v.nonNegative("kubeAPIBurst", int64(c.KubeAPIBurst))
	v.nonNegative("maxPods", int64(c.MaxPods))
	v.nonNegative("podsPerCore", int64(c.PodsPerCore))
	v.nonNegative("maxOpenFiles", c.MaxOpenFiles)
	v.inRange("oomScoreAdj", int64(deref(c.OOMScoreAdj)), -1000, 1000)
	if n := deref(c.NodeStatusMaxImages); n < -1 {
		v.invalid(field.NewPath("nodeStatusMaxImages"), n, "must be -1 or greater")
	}
	if c.MaxParallelImagePulls != nil {
		if *c.MaxParallelImagePulls < 1 {
			v.invalid(field.NewPath("maxParallelImagePulls"), *c.MaxParallelImagePulls, "must be a positive number")
		} else if *c.MaxParallelImagePulls > 1 && deref(c.SerializeImagePulls) {
			v.invalid(field.NewPath("maxParallelImagePulls"), *c.MaxParallelImagePulls, "must be 1 unless serializeImagePulls is false")
		}
	}

	high, low := deref(c.ImageGCHighThresholdPercent), deref(c.ImageGCLowThresholdPercent)
	v.inRange("imageGCHighThresholdPercent", int64(high), 0, 100)
	v.inRange("imageGCLowThresholdPercent", int64(low), 0, 100)
	if low >= high {
		v.invalid(field.NewPath("imageGCLowThresholdPercent"), low, fmt.Sprintf("must be less than imageGCHighThresholdPercent (%d)", high))
	}
	if c.ImageMinimumGCAge.Duration < 0 {
		v.invalid(field.NewPath("imageMinimumGCAge"), c.ImageMinimumGCAge.Duration.String(), "must not be negative")
	}
	if maxAge := c.ImageMaximumGCAge.Duration; maxAge < 0 {
		v.invalid(field.NewPath("imageMaximumGCAge"), maxAge.String(), "must not be negative")
	} else if maxAge > 0 && maxAge <= c.ImageMinimumGCAge.Duration {
		v.invalid(field.NewPath("imageMaximumGCAge"), maxAge.String(), fmt.Sprintf("must be greater than imageMinimumGCAge (%s)", c.ImageMinimumGCAge.Duration))
	}
	v.inRange("iptablesMasqueradeBit", int64(deref(c.IPTablesMasqueradeBit)), 0, 31)
	v.inRange("iptablesDropBit", int64(deref(c.IPTablesDropBit)), 0, 31)

	v.oneOf("cgroupDriver", c.CgroupDriver, "cgroupfs", "systemd")
	if !deref(c.CgroupsPerQOS) && len(c.EnforceNodeAllocatable) > 0 && !(len(c.EnforceNodeAllocatable) == 1 && c.EnforceNodeAllocatable[0] == "none") {
		v.invalid(field.NewPath("enforceNodeAllocatable"), strings.Join(c.EnforceNodeAllocatable, ","), "requires cgroupsPerQOS to be true")
	}
	if c.SystemCgroups != "" && c.CgroupRoot == "" {
		v.invalid(field.NewPath("systemCgroups"), c.SystemCgroups, "requires cgroupRoot to be set")
	}
	v.validateEnforceNodeAllocatable(c)
	if period := deref(c.CPUCFSQuotaPeriod).Duration; period < time.Millisecond || period > time.Second {
		v.invalid(field.NewPath("cpuCFSQuotaPeriod"), period.String(), "must be between 1ms and 1s, inclusive")
	}
	v.oneOf("hairpinMode", c.HairpinMode, kubeletconfigv1beta1.HairpinNone, kubeletconfigv1beta1.HairpinVeth, kubeletconfigv1beta1.PromiscuousBridge)
	v.oneOf("topologyManagerPolicy", c.TopologyManagerPolicy, kubeletconfigv1beta1.NoneTopologyManagerPolicy,
		kubeletconfigv1beta1.BestEffortTopologyManagerPolicy, kubeletconfigv1beta1.RestrictedTopologyManagerPolicy,
		kubeletconfigv1beta1.SingleNumaNodeTopologyManagerPolicy)
	v.oneOf("topologyManagerScope", c.TopologyManagerScope, kubeletconfigv1beta1.ContainerTopologyManagerScope, kubeletconfigv1beta1.PodTopologyManagerScope)
	v.oneOf("memorySwap.swapBehavior", c.MemorySwap.SwapBehavior, "", "NoSwap", "LimitedSwap")
	if c.ReservedSystemCPUs != "" {
		if c.SystemReservedCgroup != "" || c.KubeReservedCgroup != "" {
			v.invalid(field.NewPath("reservedSystemCPUs"), c.ReservedSystemCPUs, "cannot be combined with systemReservedCgroup or kubeReservedCgroup")
		}
		if _, err := cpuset.Parse(c.ReservedSystemCPUs); err != nil {
			v.invalid(field.NewPath("reservedSystemCPUs"), c.ReservedSystemCPUs, fmt.Sprintf("must be a CPU list such as 0-3,6: %v", err))
		}
	}
	v.validateReserved("systemReserved", c.SystemReserved)
	v.validateReserved("kubeReserved", c.KubeReserved)
	if f := c.MemoryThrottlingFactor; f != nil && (*f <= 0 || *f > 1) {
		v.invalid(field.NewPath("memoryThrottlingFactor"), *f, "must be greater than 0 and at most 1.0")
	}

	v.validateEviction(c)
	v.validateShutdown(c)
	v.validateTaints(c.RegisterWithTaints)

	if c.ContainerRuntimeEndpoint == "" {
		v.errs = append(v.errs, field.Required(field.NewPath("containerRuntimeEndpoint"), "the CRI endpoint must be set"))
	}
	if _, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil {
		v.invalid(field.NewPath("containerLogMaxSize"), c.ContainerLogMaxSize, "must be a quantity such as 10Mi")
	}
	if n := deref(c.ContainerLogMaxFiles); n < 2 {
		v.invalid(field.NewPath("containerLogMaxFiles"), n, "must be at least 2")
	}
	if n := deref(c.ContainerLogMaxWorkers); n < 1 {
		v.invalid(field.NewPath("containerLogMaxWorkers"), n, "must be at least 1")
	}
	if d := deref(c.ContainerLogMonitorInterval).Duration; d < 3*time.Second {
		v.invalid(field.NewPath("containerLogMonitorInterval"), d.String(), "must be at least 3s")
	}
	if deref(c.EnableSystemLogQuery) && !deref(c.EnableSystemLogHandler) {
		v.invalid(field.NewPath("enableSystemLogQuery"), true, "requires enableSystemLogHandler")
	}
	v.validatePodLogsDir(c.PodLogsDir)

	if errs := logsapi.Validate(&c.Logging, loggingFeatureGate(c), field.NewPath("logging")); len(errs) > 0 {
		v.errs = append(v.errs, errs...)
	}
	if _, err := FeatureGates(c); err != nil {
		v.errs = append(v.errs, field.Invalid(field.NewPath("featureGates"), c.FeatureGates, err.Error()))
	}
	return v.errs
}

func (v *validator) validateEnforceNodeAllocatable(c *kubeletconfigv1beta1.KubeletConfiguration) {
	path := field.NewPath("enforceNodeAllocatable")
	for i, level := range c.EnforceNodeAllocatable {
		switch level {
		case "pods":
		case "system-reserved", "system-reserved-compressible":
			if c.SystemReservedCgroup == "" {
				v.invalid(path.Index(i), level, "requires systemReservedCgroup to be set")
			}
		case "kube-reserved", "kube-reserved-compressible":
			if c.KubeReservedCgroup == "" {
				v.invalid(path.Index(i), level, "requires kubeReservedCgroup to be set")
			}
		case "none":
			if len(c.EnforceNodeAllocatable) > 1 {
				v.invalid(path.Index(i), level, "must be the only entry when given")
			}
		default:
			v.errs = append(v.errs, field.NotSupported(path.Index(i), level, []string{"pods", "system-reserved", "kube-reserved", "system-reserved-compressible", "kube-reserved-compressible", "none"}))
		}
	}
}

func (v *validator) validateReserved(name string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		path := field.NewPath(name).Key(k)
		switch k {
		case "cpu", "memory", "ephemeral-storage", "pid":
		default:
			v.errs = append(v.errs, field.NotSupported(path, k, []string{"cpu", "memory", "ephemeral-storage", "pid"}))
			continue
		}
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			v.invalid(path, m[k], "must be a quantity such as 500Mi")
		} else if q.Sign() < 0 {
			v.invalid(path, m[k], "must not be negative")
		}
	}
}

func knownSignal(s string) bool { return evictionapi.ResourceOf(evictionapi.Signal(s)) != "" }

func (v *validator) thresholds(name string, m map[string]string) {
	for _, k := range sortedKeys(m) {
		path := field.NewPath(name).Key(k)
		if !knownSignal(k) {
			v.errs = append(v.errs, field.NotSupported(path, k, evictionapi.Signals()))
			continue
		}
		if _, err := evictionapi.ParseValue(m[k]); err != nil {
			v.invalid(path, m[k], err.Error())
		}
	}
}

func (v *validator) validateEviction(c *kubeletconfigv1beta1.KubeletConfiguration) {
	v.thresholds("evictionHard", c.EvictionHard)
	v.thresholds("evictionSoft", c.EvictionSoft)
	v.thresholds("evictionMinimumReclaim", c.EvictionMinimumReclaim)
	for _, k := range sortedKeys(c.EvictionSoftGracePeriod) {
		path := field.NewPath("evictionSoftGracePeriod").Key(k)
		if !knownSignal(k) {
			v.errs = append(v.errs, field.NotSupported(path, k, evictionapi.Signals()))
			continue
		}
		if d, err := time.ParseDuration(c.EvictionSoftGracePeriod[k]); err != nil || d < 0 {
			v.invalid(path, c.EvictionSoftGracePeriod[k], "must be a non-negative duration such as 1m30s")
		}
	}
	for _, k := range sortedKeys(c.EvictionSoft) {
		if _, ok := c.EvictionSoftGracePeriod[k]; !ok && knownSignal(k) {
			v.errs = append(v.errs, field.Required(field.NewPath("evictionSoftGracePeriod").Key(k), "every evictionSoft signal needs a grace period"))
		}
	}
	if c.EvictionPressureTransitionPeriod.Duration < 0 {
		v.invalid(field.NewPath("evictionPressureTransitionPeriod"), c.EvictionPressureTransitionPeriod.Duration.String(), "must not be negative")
	}
}

func (v *validator) validateShutdown(c *kubeletconfigv1beta1.KubeletConfiguration) {
	total, critical := c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration
	if critical > total {
		v.invalid(field.NewPath("shutdownGracePeriodCriticalPods"), critical.String(), fmt.Sprintf("must not exceed shutdownGracePeriod (%s)", total))
	}
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"shutdownGracePeriod", total}, {"shutdownGracePeriodCriticalPods", critical}} {
		if p.d < 0 || (p.d > 0 && p.d < time.Second) {
			v.invalid(field.NewPath(p.name), p.d.String(), "must be 0 or at least 1s")
		}
	}
	if len(c.ShutdownGracePeriodByPodPriority) > 0 && (total > 0 || critical > 0) {
		v.invalid(field.NewPath("shutdownGracePeriodByPodPriority"), len(c.ShutdownGracePeriodByPodPriority), "cannot be combined with shutdownGracePeriod or shutdownGracePeriodCriticalPods")
	}
}

func (v *validator) validateTaints(taints []v1.Taint) {
	path := field.NewPath("registerWithTaints")
	for i, t := range taints {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			v.invalid(path.Index(i).Child("key"), t.Key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			v.invalid(path.Index(i).Child("value"), t.Value, msg)
		}
		switch t.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			v.errs = append(v.errs, field.NotSupported(path.Index(i).Child("effect"), t.Effect,
				[]v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}))
		}
		if t.TimeAdded != nil {
			v.errs = append(v.errs, field.Forbidden(path.Index(i).Child("timeAdded"), "must not be set"))
		}
	}
}

func (v *validator) validatePodLogsDir(dir string) {
	path := field.NewPath("podLogsDir")
	switch {
	case dir == "":
		v.errs = append(v.errs, field.Required(path, "must be set"))
	case !filepath.IsAbs(dir):
		v.invalid(path, dir, "must be an absolute path")
	case filepath.Clean(dir) != dir:
		v.invalid(path, dir, "must be a clean path (no trailing slash, '.', '..' or '//')")
	}
	for _, r := range dir {
		if r > unicode.MaxASCII {
			v.invalid(path, dir, "must contain ASCII characters only")
			break
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// loggingFeatureGate holds the logging feature gates with the values set in
// c.FeatureGates (other gates are ignored here).
func loggingFeatureGate(c *kubeletconfigv1beta1.KubeletConfiguration) featuregate.FeatureGate {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		panic(fmt.Sprintf("register logging feature gates: %v", err))
	}
	known := fg.GetAll()
	set := map[string]bool{}
	for name, on := range c.FeatureGates {
		if _, ok := known[featuregate.Feature(name)]; ok {
			set[name] = on
		}
	}
	if err := fg.SetFromMap(set); err != nil {
		panic(fmt.Sprintf("set logging feature gates: %v", err))
	}
	return fg
}
