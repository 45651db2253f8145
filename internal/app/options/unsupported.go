package options

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// SupportedConfigFields is the set of top-level KubeletConfiguration fields
// (JSON names) this kubelet honours. Any other field set to a non-default
// value is reported by UnsupportedConfigFields, and flags writing it are
// listed in UnsupportedFlags. Add a field here when its behaviour lands.
var SupportedConfigFields = map[string]bool{
	"apiVersion":               true,
	"kind":                     true,
	"staticPodPath":            true,
	"staticPodURL":             true,
	"staticPodURLHeader":       true,
	"fileCheckFrequency":       true,
	"httpCheckFrequency":       true,
	"syncFrequency":            true,
	"containerRuntimeEndpoint": true,
	"imageServiceEndpoint":     true,
	"runtimeRequestTimeout":    true,
	"readOnlyPort":             true,
	"healthzPort":              true,
	"healthzBindAddress":       true,
	"address":                  true,
	"port":                     true,
	"clusterDNS":               true,
	"clusterDomain":            true,
	"resolvConf":               true,
	"serializeImagePulls":      true,
	"maxParallelImagePulls":    true,
	"registryPullQPS":          true,
	"registryBurst":            true,
	"podLogsDir":               true,
	"oomScoreAdj":              true,
	"maxOpenFiles":             true,
	"failSwapOn":               true,
	"logging":                  true,
	"enableServer":             true,
	"runOnce":                  true,
	// Cluster mode.
	"maxPods":                      true,
	"podsPerCore":                  true,
	"registerNode":                 true,
	"registerWithTaints":           true,
	"providerID":                   true,
	"systemReserved":               true,
	"kubeReserved":                 true,
	"nodeStatusUpdateFrequency":    true,
	"nodeStatusReportFrequency":    true,
	"nodeLeaseDurationSeconds":     true,
	"nodeStatusMaxImages":          true,
	"kubeAPIQPS":                   true,
	"kubeAPIBurst":                 true,
	"contentType":                  true,
	"eventRecordQPS":               true,
	"eventBurst":                   true,
	"enableControllerAttachDetach": true,
	// Eviction (internal/node/eviction).
	"evictionHard":                     true,
	"evictionSoft":                     true,
	"evictionSoftGracePeriod":          true,
	"evictionPressureTransitionPeriod": true,
	"evictionMaxPodGracePeriod":        true,
	"evictionMinimumReclaim":           true,
	"mergeDefaultEvictionSettings":     true,
	"kernelMemcgNotification":          true,
	// Cgroups (the container manager).
	"cgroupsPerQOS":          true,
	"cgroupDriver":           true,
	"cgroupRoot":             true,
	"cpuCFSQuota":            true,
	"cpuCFSQuotaPeriod":      true,
	"podPidsLimit":           true,
	"enforceNodeAllocatable": true,
	"systemReservedCgroup":   true,
	"kubeReservedCgroup":     true,
	"failCgroupV1":           true,
	// The kubelet API.
	"authentication":                 true,
	"authorization":                  true,
	"tlsCertFile":                    true,
	"tlsPrivateKeyFile":              true,
	"tlsMinVersion":                  true,
	"tlsCipherSuites":                true,
	"enableDebuggingHandlers":        true,
	"enableProfilingHandler":         true,
	"enableContentionProfiling":      true,
	"enableSystemLogHandler":         true,
	"enableDebugFlagsHandler":        true,
	"streamingConnectionIdleTimeout": true,
	// Certificates (internal/certificate).
	"rotateCertificates": true,
	"serverTLSBootstrap": true,
	// Garbage collection and log rotation.
	"imageGCHighThresholdPercent": true,
	"imageGCLowThresholdPercent":  true,
	"imageMinimumGCAge":           true,
	"imageMaximumGCAge":           true,
	"containerLogMaxSize":         true,
	"containerLogMaxFiles":        true,
	"containerLogMaxWorkers":      true,
	"containerLogMonitorInterval": true,
	// Pod security.
	"allowedUnsafeSysctls": true,
	"seccompDefault":       true,
	// Swap (criconfig: per-container swap limits through the CRI).
	"memorySwap": true,
	// Stats (internal/node/stats).
	"volumeStatsAggPeriod": true,
	// Local ephemeral storage limits (internal/node/eviction).
	"localStorageCapacityIsolation": true,
	// Graceful node shutdown (internal/node/shutdown).
	"shutdownGracePeriod":              true,
	"shutdownGracePeriodCriticalPods":  true,
	"shutdownGracePeriodByPodPriority": true,
	// User namespaces of hostUsers: false pods (internal/runtime/userns).
	"userNamespaces": true,
}

// UnsupportedFlags lists, sorted, every flag that is accepted so existing
// units keep starting but has no effect yet: legacy flag-only options and
// flags writing a field missing from SupportedConfigFields. Setting one
// produces a warning naming it.
var UnsupportedFlags = computeUnsupportedFlags()

// UnsupportedConfigFields returns, sorted, the top-level fields of cfg (JSON
// names) that differ from their v1beta1 default and are not in
// SupportedConfigFields. cfg should already be defaulted.
func UnsupportedConfigFields(cfg *kubeletconfigv1beta1.KubeletConfiguration) []string {
	return unsupportedFields(cfg, false)
}

// defaultDependent are fields whose default is computed from other fields;
// they count as default when they equal either the plain default or the
// default derived from the fields they follow.
var defaultDependent = map[string]bool{
	"nodeStatusReportFrequency":              true, // follows nodeStatusUpdateFrequency
	"serializeImagePulls":                    true, // follows maxParallelImagePulls
	"crashLoopBackOff":                       true, // follows featureGates
	"imagePullCredentialsVerificationPolicy": true, // follows featureGates
	"evictionHard":                           true, // follows mergeDefaultEvictionSettings
}

// unsupportedFields compares against the legacy (no --config) defaults when
// legacy is true.
func unsupportedFields(cfg *kubeletconfigv1beta1.KubeletConfiguration, legacy bool) []string {
	pure := &kubeletconfigv1beta1.KubeletConfiguration{}
	derived := &kubeletconfigv1beta1.KubeletConfiguration{
		NodeStatusUpdateFrequency:    cfg.NodeStatusUpdateFrequency,
		MaxParallelImagePulls:        cfg.MaxParallelImagePulls,
		FeatureGates:                 cfg.FeatureGates,
		MergeDefaultEvictionSettings: cfg.MergeDefaultEvictionSettings,
	}
	SetDefaults(pure)
	SetDefaults(derived)
	if legacy {
		applyLegacyDefaults(pure)
	}
	have, wantPure, wantDerived := toFields(cfg), toFields(pure), toFields(derived)
	var out []string
	for _, name := range configFieldNames() {
		if SupportedConfigFields[name] {
			continue
		}
		isDefault := reflect.DeepEqual(have[name], wantPure[name])
		if !isDefault && defaultDependent[name] {
			isDefault = reflect.DeepEqual(have[name], wantDerived[name])
		}
		if !isDefault {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// toFields renders c as its top-level JSON fields, so that nil and empty
// values compare the way they serialize.
func toFields(c *kubeletconfigv1beta1.KubeletConfiguration) map[string]any {
	data, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("KubeletConfiguration must always encode: %v", err))
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		panic(fmt.Sprintf("KubeletConfiguration must always decode: %v", err))
	}
	return m
}

// unsupportedFlagWarning is the one warning line for a set unsupported flag.
func unsupportedFlagWarning(name string) string {
	return fmt.Sprintf("flag --%s is accepted for compatibility but not supported by this kubelet; it has no effect", name)
}

// unsupportedFieldWarning is the one warning line for an unsupported field.
func unsupportedFieldWarning(name string) string {
	return fmt.Sprintf("configuration field %s is set but not supported by this kubelet; it has no effect", name)
}
