package options

import (
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// DefaultRootDir is the default of --root-dir.
const DefaultRootDir = "/var/lib/kubelet"

// KubeletFlags holds the options that exist only on the command line: values
// that identify one node or must not change while it runs, so they do not
// belong in a KubeletConfiguration shared between nodes.
type KubeletFlags struct {
	// ConfigFile is --config, the KubeletConfiguration file ("" = none).
	ConfigFile string
	// ConfigDir is --config-dir, a directory of *.conf drop-ins merged over ConfigFile.
	ConfigDir string
	// KubeConfig is --kubeconfig; empty means standalone mode.
	KubeConfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig.
	BootstrapKubeconfig string
	// HostnameOverride is --hostname-override; see NodeName.
	HostnameOverride string
	// NodeIP is --node-ip, one IP or a comma-separated dual-stack pair.
	NodeIP string
	// RootDirectory is --root-dir.
	RootDirectory string
	// CertDirectory is --cert-dir.
	CertDirectory string
	// LockFilePath is --lock-file.
	LockFilePath string
	// ExitOnLockContention is --exit-on-lock-contention.
	ExitOnLockContention bool
	// NodeLabels is --node-labels.
	NodeLabels map[string]string
	// MinimumGCAge is --minimum-container-ttl-duration: dead containers
	// younger than this are not garbage collected.
	MinimumGCAge time.Duration
	// MaxPerPodContainerCount is --maximum-dead-containers-per-container
	// (negative: no limit).
	MaxPerPodContainerCount int32
	// MaxContainerCount is --maximum-dead-containers (negative: no limit).
	MaxContainerCount int32

	// CloudProvider is --cloud-provider: "" or "external" (an external
	// cloud controller manager initialises the Node); any other value is
	// refused at start-up, as upstream (nodestatus.CheckCloudProvider).
	CloudProvider string

	// Ours, beyond upstream (standalone mode only; flags because
	// KubeletConfiguration v1beta1 is upstream's strict schema).

	// LocalObjectsDir is --local-objects-dir: a directory of ConfigMap and
	// Secret manifests for static pods, read besides staticPodPath.
	LocalObjectsDir string
	// LocalAPIAddress is --local-api-address: where the kubectl-compatible
	// local API listens (host:port); "" turns it off.
	LocalAPIAddress string

	// The following are parsed but not honoured yet (see UnsupportedFlags).

	// RuntimeCgroups is --runtime-cgroups.
	RuntimeCgroups string
	// ImageCredentialProviderConfig is --image-credential-provider-config.
	ImageCredentialProviderConfig string
	// ImageCredentialProviderBinDir is --image-credential-provider-bin-dir.
	ImageCredentialProviderBinDir string

	// Help is --help / -h.
	Help bool
	// Version is the --version value: "", "false", "true", "raw" or "vX.Y.Z"
	// (the last overrides the reported version and does not exit).
	Version string
}

// NewKubeletFlags returns the flag-only options at their upstream defaults.
func NewKubeletFlags() *KubeletFlags {
	return &KubeletFlags{
		RootDirectory: filepath.Clean(DefaultRootDir),
		CertDirectory: filepath.Join(DefaultRootDir, "pki"),
		NodeLabels:    map[string]string{},
		// Upstream's container GC defaults.
		MaxPerPodContainerCount: 1,
		MaxContainerCount:       -1,
	}
}

// unsupportedFlagOnly names the flag-only flags that are accepted so existing
// units start, but have no effect yet.
var unsupportedFlagOnly = map[string]bool{
	"cloud-config":                             true,
	"runtime-cgroups":                          true,
	"pod-infra-container-image":                true,
	"register-schedulable":                     true,
	"keep-terminated-pod-volumes":              true,
	"experimental-mounter-path":                true,
	"experimental-allocatable-ignore-eviction": true,
	// cAdvisor flags upstream registers on the kubelet.
	"housekeeping-interval":           true,
	"application-metrics-count-limit": true,
	"boot-id-file":                    true,
	"container-hints":                 true,
	"containerd":                      true,
	"containerd-namespace":            true,
	"enable-load-reader":              true,
	"event-storage-age-limit":         true,
	"event-storage-event-limit":       true,
	"global-housekeeping-interval":    true,
	"log-cadvisor-usage":              true,
	"machine-id-file":                 true,
	"storage-driver-user":             true,
	"storage-driver-password":         true,
	"storage-driver-host":             true,
	"storage-driver-db":               true,
	"storage-driver-table":            true,
	"storage-driver-secure":           true,
	"storage-driver-buffer-duration":  true,
}

const cadvisorDeprecation = "it is a cAdvisor flag that was registered on the kubelet by mistake and will be removed"

// addFlagOnlyFlags registers the options that live in KubeletFlags plus the
// legacy flag-only options that are accepted and ignored.
func addFlagOnlyFlags(fs *pflag.FlagSet, f *KubeletFlags) {
	fs.BoolVarP(&f.Help, "help", "h", false, "Show this help and exit.")
	fs.Var(&versionValue{&f.Version}, "version", "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported version")
	fs.Lookup("version").NoOptDefVal = "true"

	fs.StringVar(&f.ConfigFile, "config", f.ConfigFile, "Load the initial KubeletConfiguration from this file (absolute, or relative to the working directory). Command-line flags override values from this file. Omit it to use the built-in defaults.")
	fs.StringVar(&f.ConfigDir, "config-dir", f.ConfigDir, "Directory of drop-in KubeletConfiguration files (*.conf, applied in lexical order) that override --config.")
	fs.StringVar(&f.KubeConfig, "kubeconfig", f.KubeConfig, "Path to a kubeconfig file for talking to the API server. Omit it to run in standalone mode.")
	fs.StringVar(&f.BootstrapKubeconfig, "bootstrap-kubeconfig", f.BootstrapKubeconfig, "Path to a kubeconfig used to obtain a client certificate when the --kubeconfig file does not exist yet; the resulting kubeconfig is written to --kubeconfig and the key pair to --cert-dir.")
	fs.StringVar(&f.HostnameOverride, "hostname-override", f.HostnameOverride, "Use this string instead of the machine's hostname as the node name.")
	fs.StringVar(&f.NodeIP, "node-ip", f.NodeIP, "IP address of the node, or a comma-separated IPv4,IPv6 pair for dual-stack. '::' prefers the default IPv6 address.")
	fs.StringVar(&f.CertDirectory, "cert-dir", f.CertDirectory, "Directory holding the kubelet's TLS certificates; ignored when --tls-cert-file and --tls-private-key-file are set.")
	fs.StringVar(&f.RootDirectory, "root-dir", f.RootDirectory, "Directory for kubelet state (pod volumes, plugins, checkpoints).")
	fs.Var(cliflag.NewMapStringString(&f.NodeLabels), "node-labels", "Labels to add when registering the node, as key=value pairs separated by ','. Labels in the kubernetes.io and k8s.io namespaces must use a prefix the kubelet is allowed to set.")
	fs.StringVar(&f.LockFilePath, "lock-file", f.LockFilePath, "Path of a lock file the kubelet holds while running.")
	fs.BoolVar(&f.ExitOnLockContention, "exit-on-lock-contention", f.ExitOnLockContention, "Exit when another process tries to take the --lock-file.")

	fs.StringVar(&f.CloudProvider, "cloud-provider", f.CloudProvider, "The provider for cloud services; '' for none, 'external' for an external cloud provider.")
	fs.StringVar(&f.RuntimeCgroups, "runtime-cgroups", f.RuntimeCgroups, "Absolute name of the cgroup the container runtime is expected to run in.")
	fs.StringVar(&f.ImageCredentialProviderConfig, "image-credential-provider-config", f.ImageCredentialProviderConfig, "Path to a credential provider plugin config file, or a directory of them.")
	fs.StringVar(&f.ImageCredentialProviderBinDir, "image-credential-provider-bin-dir", f.ImageCredentialProviderBinDir, "Directory holding credential provider plugin binaries.")

	fs.StringVar(&f.LocalAPIAddress, "local-api-address", f.LocalAPIAddress, "Standalone mode only (not an upstream flag): serve a kubectl-compatible API (pods with logs, exec, attach and port-forward, events, local ConfigMaps and Secrets, the node) on this host:port over TLS with client certificates, and write a kubeconfig for it to <root-dir>/local-api/kubeconfig (root only). Off when empty.")
	fs.StringVar(&f.LocalObjectsDir, "local-objects-dir", f.LocalObjectsDir, "Standalone mode only (not an upstream flag): a directory of ConfigMap and Secret manifests that static pods may reference, read besides those in staticPodPath (which are always read in standalone mode).")

	fs.DurationVar(&f.MinimumGCAge, "minimum-container-ttl-duration", f.MinimumGCAge, "Minimum age of a finished container before it is garbage collected.")
	fs.Int32Var(&f.MaxPerPodContainerCount, "maximum-dead-containers-per-container", f.MaxPerPodContainerCount, "Maximum number of old instances kept per container; negative keeps all.")
	fs.Int32Var(&f.MaxContainerCount, "maximum-dead-containers", f.MaxContainerCount, "Maximum number of old container instances kept on the node; negative keeps all.")
	const evictionInstead = "use --eviction-hard or --eviction-soft instead"
	for _, name := range []string{"minimum-container-ttl-duration", "maximum-dead-containers-per-container", "maximum-dead-containers"} {
		markDeprecated(fs, name, evictionInstead)
	}

	addIgnoredFlags(fs)
}

// addIgnoredFlags registers legacy flag-only flags that are accepted so old
// units start; their values are discarded.
func addIgnoredFlags(fs *pflag.FlagSet) {
	str := func(name, usage, deprecated string) {
		fs.String(name, "", usage)
		markDeprecated(fs, name, deprecated)
	}
	boolean := func(name string, def bool, usage, deprecated string) {
		fs.Bool(name, def, usage)
		markDeprecated(fs, name, deprecated)
	}
	integer := func(name string, def int32, usage, deprecated string) {
		fs.Int32(name, def, usage)
		markDeprecated(fs, name, deprecated)
	}
	duration := func(name string, def time.Duration, usage, deprecated string) {
		fs.Duration(name, def, usage)
		markDeprecated(fs, name, deprecated)
	}
	str("cloud-config", "Path to the cloud provider configuration file.", "it will be removed in favour of external cloud providers")
	str("pod-infra-container-image", "Image the image garbage collector must keep; container runtimes configure the sandbox image themselves.", "the image garbage collector gets the sandbox image from the CRI")
	str("experimental-mounter-path", "Path of a mounter binary.", "it will be removed in favour of CSI")
	boolean("register-schedulable", true, "Register the node as schedulable.", "use --register-with-taints instead")
	boolean("keep-terminated-pod-volumes", false, "Keep volumes of terminated pods mounted.", "it will be removed")
	boolean("experimental-allocatable-ignore-eviction", false, "Ignore hard eviction thresholds when computing node allocatable.", "it will be removed")

	// cAdvisor options upstream exposes on the kubelet.
	duration("housekeeping-interval", 10*time.Second, "Interval between container housekeepings.", "")
	for _, name := range []string{"boot-id-file", "container-hints", "containerd", "containerd-namespace",
		"event-storage-age-limit", "event-storage-event-limit", "machine-id-file", "storage-driver-user",
		"storage-driver-password", "storage-driver-host", "storage-driver-db", "storage-driver-table"} {
		str(name, "cAdvisor option.", cadvisorDeprecation)
	}
	for _, name := range []string{"enable-load-reader", "log-cadvisor-usage", "storage-driver-secure"} {
		boolean(name, false, "cAdvisor option.", cadvisorDeprecation)
	}
	for _, name := range []string{"global-housekeeping-interval", "storage-driver-buffer-duration"} {
		duration(name, 0, "cAdvisor option.", cadvisorDeprecation)
	}
	integer("application-metrics-count-limit", 100, "cAdvisor option.", cadvisorDeprecation)
}

// markDeprecated sets the deprecation text but keeps the flag in --help, as
// upstream does.
func markDeprecated(fs *pflag.FlagSet, name, why string) {
	if why == "" {
		return
	}
	f := fs.Lookup(name)
	f.Deprecated = why
	f.Hidden = false
}

// configDeprecation is attached to flags that write KubeletConfiguration fields.
const configDeprecation = "set this in the KubeletConfiguration file given by --config instead; see https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/"

// configFlag is one flag that writes a KubeletConfiguration field.
type configFlag struct {
	name      string
	shorthand string
	// field is the top-level JSON name of the field the flag writes.
	field string
	usage string
	value func(c *kubeletconfigv1beta1.KubeletConfiguration) pflag.Value
	// boolean flags may be given without a value.
	boolean bool
	// current flags are not deprecated upstream.
	current bool
}

type kc = kubeletconfigv1beta1.KubeletConfiguration

// configFlags lists every upstream flag that writes a KubeletConfiguration
// field. It is the single source of the flag → field mapping.
var configFlags = []configFlag{
	{name: "enable-server", field: "enableServer", boolean: true, usage: "Enable the kubelet's HTTP server.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.EnableServer) }},
	{name: "fail-swap-on", field: "failSwapOn", boolean: true, usage: "Fail to start if swap is enabled on the node.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.FailSwapOn) }},
	{name: "pod-manifest-path", field: "staticPodPath", usage: "Directory of static pod files, or a single static pod file. Files starting with dots are ignored.",
		value: func(c *kc) pflag.Value { return stringVal(&c.StaticPodPath) }},
	{name: "sync-frequency", field: "syncFrequency", usage: "Maximum period between synchronizing running containers and config.",
		value: func(c *kc) pflag.Value { return durationVal(&c.SyncFrequency) }},
	{name: "file-check-frequency", field: "fileCheckFrequency", usage: "Period between checking static pod files for new data.",
		value: func(c *kc) pflag.Value { return durationVal(&c.FileCheckFrequency) }},
	{name: "http-check-frequency", field: "httpCheckFrequency", usage: "Period between checking --manifest-url for new data.",
		value: func(c *kc) pflag.Value { return durationVal(&c.HTTPCheckFrequency) }},
	{name: "manifest-url", field: "staticPodURL", usage: "URL to fetch additional static pods from.",
		value: func(c *kc) pflag.Value { return stringVal(&c.StaticPodURL) }},
	{name: "manifest-url-header", field: "staticPodURLHeader", usage: "HTTP headers for --manifest-url as comma-separated key:value pairs; repeat the flag or a key to send a header more than once, e.g. --manifest-url-header 'a:hello,b:again' --manifest-url-header 'b:beautiful'.",
		value: func(c *kc) pflag.Value { return cliflag.NewColonSeparatedMultimapStringString(&c.StaticPodURLHeader) }},
	{name: "address", field: "address", usage: "IP address to serve on ('0.0.0.0' or '::' for all interfaces).",
		value: func(c *kc) pflag.Value { return ipVal(&c.Address) }},
	{name: "port", field: "port", usage: "Port to serve the kubelet API on.",
		value: func(c *kc) pflag.Value { return int32Val(&c.Port) }},
	{name: "read-only-port", field: "readOnlyPort", usage: "Port of the unauthenticated read-only API (0 disables it).",
		value: func(c *kc) pflag.Value { return int32Val(&c.ReadOnlyPort) }},
	{name: "container-runtime-endpoint", field: "containerRuntimeEndpoint", usage: "Endpoint of the CRI runtime service, e.g. 'unix:///run/containerd/containerd.sock'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ContainerRuntimeEndpoint) }},
	{name: "image-service-endpoint", field: "imageServiceEndpoint", usage: "Endpoint of the CRI image service; defaults to --container-runtime-endpoint.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ImageServiceEndpoint) }},
	{name: "anonymous-auth", field: "authentication", boolean: true, usage: "Allow anonymous requests to the kubelet server (user system:anonymous, group system:unauthenticated).",
		value: func(c *kc) pflag.Value { return boolPtr(&c.Authentication.Anonymous.Enabled) }},
	{name: "authentication-token-webhook", field: "authentication", boolean: true, usage: "Authenticate bearer tokens with the TokenReview API.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.Authentication.Webhook.Enabled) }},
	{name: "authentication-token-webhook-cache-ttl", field: "authentication", usage: "How long to cache webhook token authentication responses.",
		value: func(c *kc) pflag.Value { return durationVal(&c.Authentication.Webhook.CacheTTL) }},
	{name: "client-ca-file", field: "authentication", usage: "Authenticate client certificates signed by a CA in this file.",
		value: func(c *kc) pflag.Value { return stringVal(&c.Authentication.X509.ClientCAFile) }},
	{name: "authorization-mode", field: "authorization", usage: "Authorization mode of the kubelet server: AlwaysAllow or Webhook.",
		value: func(c *kc) pflag.Value {
			return &scalarValue[kubeletconfigv1beta1.KubeletAuthorizationMode]{&c.Authorization.Mode,
				func(s string) (kubeletconfigv1beta1.KubeletAuthorizationMode, error) {
					return kubeletconfigv1beta1.KubeletAuthorizationMode(s), nil
				},
				func(m kubeletconfigv1beta1.KubeletAuthorizationMode) string { return string(m) }, "string"}
		}},
	{name: "authorization-webhook-cache-authorized-ttl", field: "authorization", usage: "How long to cache 'authorized' webhook responses.",
		value: func(c *kc) pflag.Value { return durationVal(&c.Authorization.Webhook.CacheAuthorizedTTL) }},
	{name: "authorization-webhook-cache-unauthorized-ttl", field: "authorization", usage: "How long to cache 'unauthorized' webhook responses.",
		value: func(c *kc) pflag.Value { return durationVal(&c.Authorization.Webhook.CacheUnauthorizedTTL) }},
	{name: "tls-cert-file", field: "tlsCertFile", usage: "x509 serving certificate (intermediates appended). Without it and --tls-private-key-file a self-signed pair is written to --cert-dir.",
		value: func(c *kc) pflag.Value { return stringVal(&c.TLSCertFile) }},
	{name: "tls-private-key-file", field: "tlsPrivateKeyFile", usage: "x509 private key matching --tls-cert-file.",
		value: func(c *kc) pflag.Value { return stringVal(&c.TLSPrivateKeyFile) }},
	{name: "rotate-server-certificates", field: "serverTLSBootstrap", boolean: true, usage: "Request and rotate the serving certificate through the certificates API.",
		value: func(c *kc) pflag.Value { return boolVal(&c.ServerTLSBootstrap) }},
	{name: "tls-cipher-suites", field: "tlsCipherSuites", usage: "Comma-separated cipher suites for the server; Go's defaults if omitted.",
		value: func(c *kc) pflag.Value { return &stringSliceValue{target: &c.TLSCipherSuites} }},
	{name: "tls-min-version", field: "tlsMinVersion", usage: "Minimum TLS version, e.g. VersionTLS12.",
		value: func(c *kc) pflag.Value { return stringVal(&c.TLSMinVersion) }},
	{name: "rotate-certificates", field: "rotateCertificates", boolean: true, usage: "Rotate the client certificate through the certificates API as it nears expiry.",
		value: func(c *kc) pflag.Value { return boolVal(&c.RotateCertificates) }},
	{name: "registry-qps", field: "registryPullQPS", usage: "Limit image pulls to this many per second; 0 means unlimited.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.RegistryPullQPS) }},
	{name: "registry-burst", field: "registryBurst", usage: "Burst of image pulls allowed above --registry-qps.",
		value: func(c *kc) pflag.Value { return int32Val(&c.RegistryBurst) }},
	{name: "event-qps", field: "eventRecordQPS", usage: "Limit event creations to this many per second; 0 means unlimited.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.EventRecordQPS) }},
	{name: "event-burst", field: "eventBurst", usage: "Burst of event creations allowed above --event-qps.",
		value: func(c *kc) pflag.Value { return int32Val(&c.EventBurst) }},
	{name: "enable-debugging-handlers", field: "enableDebuggingHandlers", boolean: true, usage: "Serve logs, exec, attach, port-forward and other debugging endpoints.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.EnableDebuggingHandlers) }},
	{name: "contention-profiling", field: "enableContentionProfiling", boolean: true, usage: "Enable block profiling when profiling is enabled.",
		value: func(c *kc) pflag.Value { return boolVal(&c.EnableContentionProfiling) }},
	{name: "healthz-port", field: "healthzPort", usage: "Port of the localhost healthz endpoint (0 disables it).",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.HealthzPort) }},
	{name: "healthz-bind-address", field: "healthzBindAddress", usage: "IP address for the healthz server ('0.0.0.0' or '::' for all interfaces).",
		value: func(c *kc) pflag.Value { return ipVal(&c.HealthzBindAddress) }},
	{name: "oom-score-adj", field: "oomScoreAdj", usage: "oom_score_adj of the kubelet process, in [-1000, 1000].",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.OOMScoreAdj) }},
	{name: "cluster-domain", field: "clusterDomain", usage: "Cluster DNS domain added to containers' search paths.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ClusterDomain) }},
	{name: "volume-plugin-dir", field: "volumePluginDir", usage: "Directory of third-party (flexvolume) volume plugins.",
		value: func(c *kc) pflag.Value { return stringVal(&c.VolumePluginDir) }},
	{name: "cluster-dns", field: "clusterDNS", usage: "Comma-separated DNS server IPs for pods with dnsPolicy=ClusterFirst.",
		value: func(c *kc) pflag.Value { return &stringSliceValue{target: &c.ClusterDNS} }},
	{name: "streaming-connection-idle-timeout", field: "streamingConnectionIdleTimeout", usage: "Idle time after which a streaming connection is closed; 0 means never.",
		value: func(c *kc) pflag.Value { return durationVal(&c.StreamingConnectionIdleTimeout) }},
	{name: "node-status-update-frequency", field: "nodeStatusUpdateFrequency", usage: "How often the kubelet computes node status and posts it when it changed.",
		value: func(c *kc) pflag.Value { return durationVal(&c.NodeStatusUpdateFrequency) }},
	{name: "minimum-image-ttl-duration", field: "imageMinimumGCAge", usage: "Minimum age of an unused image before it may be garbage collected.",
		value: func(c *kc) pflag.Value { return durationVal(&c.ImageMinimumGCAge) }},
	{name: "image-gc-high-threshold", field: "imageGCHighThresholdPercent", usage: "Disk usage percent above which image garbage collection always runs, in [0, 100]; 100 disables it.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.ImageGCHighThresholdPercent) }},
	{name: "image-gc-low-threshold", field: "imageGCLowThresholdPercent", usage: "Disk usage percent image garbage collection frees down to, in [0, 100] and below --image-gc-high-threshold.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.ImageGCLowThresholdPercent) }},
	{name: "volume-stats-agg-period", field: "volumeStatsAggPeriod", usage: "Period of volume disk usage calculation; negative disables it.",
		value: func(c *kc) pflag.Value { return durationVal(&c.VolumeStatsAggPeriod) }},
	{name: "feature-gates", field: "featureGates", usage: "Comma-separated key=true|false pairs enabling or disabling features.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringBool(&c.FeatureGates) }},
	{name: "kubelet-cgroups", field: "kubeletCgroups", usage: "Absolute name of the cgroup to run the kubelet in.",
		value: func(c *kc) pflag.Value { return stringVal(&c.KubeletCgroups) }},
	{name: "system-cgroups", field: "systemCgroups", usage: "Absolute name of the cgroup for non-kernel processes not already in a cgroup under '/'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.SystemCgroups) }},
	{name: "provider-id", field: "providerID", current: true, usage: "Unique identifier of the node in a machine database, e.g. a cloud provider.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ProviderID) }},
	{name: "cgroups-per-qos", field: "cgroupsPerQOS", boolean: true, usage: "Create the QoS and pod cgroup hierarchy.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.CgroupsPerQOS) }},
	{name: "cgroup-driver", field: "cgroupDriver", usage: "Driver used to manipulate cgroups: 'cgroupfs' or 'systemd'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.CgroupDriver) }},
	{name: "cgroup-root", field: "cgroupRoot", usage: "Root cgroup for pods.",
		value: func(c *kc) pflag.Value { return stringVal(&c.CgroupRoot) }},
	{name: "cpu-manager-policy", field: "cpuManagerPolicy", usage: "CPU manager policy: 'none' or 'static'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.CPUManagerPolicy) }},
	{name: "cpu-manager-policy-options", field: "cpuManagerPolicyOptions", usage: "key=value options of the CPU manager policy.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringStringNoSplit(&c.CPUManagerPolicyOptions) }},
	{name: "cpu-manager-reconcile-period", field: "cpuManagerReconcilePeriod", usage: "CPU manager reconciliation period.",
		value: func(c *kc) pflag.Value { return durationVal(&c.CPUManagerReconcilePeriod) }},
	{name: "qos-reserved", field: "qosReserved", usage: "ResourceName=Percentage pairs (e.g. memory=50%) of requests reserved at the QoS level.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringString(&c.QOSReserved) }},
	{name: "topology-manager-policy", field: "topologyManagerPolicy", usage: "Topology manager policy: 'none', 'best-effort', 'restricted' or 'single-numa-node'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.TopologyManagerPolicy) }},
	{name: "topology-manager-scope", field: "topologyManagerScope", usage: "Topology manager scope: 'container' or 'pod'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.TopologyManagerScope) }},
	{name: "topology-manager-policy-options", field: "topologyManagerPolicyOptions", usage: "key=value options of the topology manager policy.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringStringNoSplit(&c.TopologyManagerPolicyOptions) }},
	{name: "runtime-request-timeout", field: "runtimeRequestTimeout", usage: "Timeout of runtime requests other than pull, logs, exec and attach.",
		value: func(c *kc) pflag.Value { return durationVal(&c.RuntimeRequestTimeout) }},
	{name: "hairpin-mode", field: "hairpinMode", usage: "Hairpin NAT setup: 'promiscuous-bridge', 'hairpin-veth' or 'none'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.HairpinMode) }},
	{name: "max-pods", field: "maxPods", usage: "Maximum number of pods on this node.",
		value: func(c *kc) pflag.Value { return int32Val(&c.MaxPods) }},
	{name: "pod-cidr", field: "podCIDR", usage: "Pod IP range, used only in standalone mode.",
		value: func(c *kc) pflag.Value { return stringVal(&c.PodCIDR) }},
	{name: "pod-max-pids", field: "podPidsLimit", usage: "Maximum number of processes per pod; -1 uses the node's allocatable PIDs.",
		value: func(c *kc) pflag.Value { return int64Ptr(&c.PodPidsLimit) }},
	{name: "resolv-conf", field: "resolvConf", usage: "Resolver configuration used as the basis of container DNS configuration.",
		value: func(c *kc) pflag.Value { return stringPtr(&c.ResolverConfig) }},
	{name: "runonce", field: "runOnce", boolean: true, usage: "Start the static pods, wait for them, and exit. Exclusive with --enable-server.",
		value: func(c *kc) pflag.Value { return boolVal(&c.RunOnce) }},
	{name: "cpu-cfs-quota", field: "cpuCFSQuota", boolean: true, usage: "Enforce CPU limits with CFS quota.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.CPUCFSQuota) }},
	{name: "cpu-cfs-quota-period", field: "cpuCFSQuotaPeriod", usage: "CPU CFS quota period (cpu.cfs_period_us).",
		value: func(c *kc) pflag.Value { return durationPtr(&c.CPUCFSQuotaPeriod) }},
	{name: "enable-controller-attach-detach", field: "enableControllerAttachDetach", boolean: true, usage: "Let the attach/detach controller attach volumes instead of the kubelet.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.EnableControllerAttachDetach) }},
	{name: "make-iptables-util-chains", field: "makeIPTablesUtilChains", boolean: true, usage: "Ensure iptables utility chains exist on the host.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.MakeIPTablesUtilChains) }},
	{name: "iptables-masquerade-bit", field: "iptablesMasqueradeBit", usage: "Has no effect upstream either; kube-proxy owns masquerading.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.IPTablesMasqueradeBit) }},
	{name: "iptables-drop-bit", field: "iptablesDropBit", usage: "Has no effect upstream either.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.IPTablesDropBit) }},
	{name: "container-log-max-size", field: "containerLogMaxSize", usage: "Size (e.g. 10Mi) at which a container log is rotated.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ContainerLogMaxSize) }},
	{name: "container-log-max-files", field: "containerLogMaxFiles", usage: "Maximum number of log files kept per container; at least 2.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.ContainerLogMaxFiles) }},
	{name: "allowed-unsafe-sysctls", field: "allowedUnsafeSysctls", usage: "Comma-separated unsafe sysctls or patterns (ending in *) pods may set.",
		value: func(c *kc) pflag.Value { return &stringSliceValue{target: &c.AllowedUnsafeSysctls} }},
	{name: "node-status-max-images", field: "nodeStatusMaxImages", usage: "Maximum number of images reported in node status; -1 for no cap.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.NodeStatusMaxImages) }},
	{name: "kernel-memcg-notification", field: "kernelMemcgNotification", boolean: true, usage: "Use kernel memcg notifications to detect memory eviction thresholds.",
		value: func(c *kc) pflag.Value { return boolVal(&c.KernelMemcgNotification) }},
	{name: "local-storage-capacity-isolation", field: "localStorageCapacityIsolation", boolean: true, usage: "Enable local ephemeral storage isolation.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.LocalStorageCapacityIsolation) }},
	{name: "max-open-files", field: "maxOpenFiles", usage: "Number of files the kubelet process may open.",
		value: func(c *kc) pflag.Value { return int64Val(&c.MaxOpenFiles) }},
	{name: "kube-api-content-type", field: "contentType", usage: "Content type of requests sent to the API server.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ContentType) }},
	{name: "kube-api-qps", field: "kubeAPIQPS", usage: "QPS towards the API server (events and heartbeats excluded).",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.KubeAPIQPS) }},
	{name: "kube-api-burst", field: "kubeAPIBurst", usage: "Burst towards the API server (events and heartbeats excluded).",
		value: func(c *kc) pflag.Value { return int32Val(&c.KubeAPIBurst) }},
	{name: "serialize-image-pulls", field: "serializeImagePulls", boolean: true, usage: "Pull images one at a time.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.SerializeImagePulls) }},
	{name: "max-parallel-image-pulls", field: "maxParallelImagePulls", usage: "Maximum number of parallel image pulls; needs --serialize-image-pulls=false.",
		value: func(c *kc) pflag.Value { return int32Ptr(&c.MaxParallelImagePulls) }},
	{name: "eviction-hard", field: "evictionHard", usage: "Hard eviction thresholds, e.g. memory.available<1Gi,nodefs.available<10%.",
		value: func(c *kc) pflag.Value { return cliflag.NewLangleSeparatedMapStringString(&c.EvictionHard) }},
	{name: "eviction-soft", field: "evictionSoft", usage: "Soft eviction thresholds, e.g. memory.available<1.5Gi.",
		value: func(c *kc) pflag.Value { return cliflag.NewLangleSeparatedMapStringString(&c.EvictionSoft) }},
	{name: "eviction-soft-grace-period", field: "evictionSoftGracePeriod", usage: "Grace periods of soft eviction thresholds, e.g. memory.available=1m30s.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringString(&c.EvictionSoftGracePeriod) }},
	{name: "eviction-pressure-transition-period", field: "evictionPressureTransitionPeriod", usage: "How long to wait before leaving an eviction pressure condition.",
		value: func(c *kc) pflag.Value { return durationVal(&c.EvictionPressureTransitionPeriod) }},
	{name: "eviction-max-pod-grace-period", field: "evictionMaxPodGracePeriod", usage: "Maximum grace period in seconds for soft evictions; negative defers to the pod.",
		value: func(c *kc) pflag.Value { return int32Val(&c.EvictionMaxPodGracePeriod) }},
	{name: "eviction-minimum-reclaim", field: "evictionMinimumReclaim", usage: "Minimum reclaims per signal, e.g. imagefs.available=2Gi.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringString(&c.EvictionMinimumReclaim) }},
	{name: "pods-per-core", field: "podsPerCore", usage: "Maximum pods per core, capped by --max-pods; 0 disables the limit.",
		value: func(c *kc) pflag.Value { return int32Val(&c.PodsPerCore) }},
	{name: "protect-kernel-defaults", field: "protectKernelDefaults", boolean: true, usage: "Fail if kernel tunables differ from the kubelet's defaults.",
		value: func(c *kc) pflag.Value { return boolVal(&c.ProtectKernelDefaults) }},
	{name: "reserved-cpus", field: "reservedSystemCPUs", usage: "CPUs or CPU ranges reserved for system and kubernetes, e.g. 0-1,6.",
		value: func(c *kc) pflag.Value { return stringVal(&c.ReservedSystemCPUs) }},
	{name: "system-reserved", field: "systemReserved", usage: "Resources reserved for non-kubernetes components, e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringString(&c.SystemReserved) }},
	{name: "kube-reserved", field: "kubeReserved", usage: "Resources reserved for kubernetes components, e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000.",
		value: func(c *kc) pflag.Value { return cliflag.NewMapStringString(&c.KubeReserved) }},
	{name: "enforce-node-allocatable", field: "enforceNodeAllocatable", usage: "Comma-separated node allocatable enforcement levels: 'none', 'pods', 'system-reserved', 'kube-reserved'.",
		value: func(c *kc) pflag.Value { return &stringSliceValue{target: &c.EnforceNodeAllocatable} }},
	{name: "system-reserved-cgroup", field: "systemReservedCgroup", usage: "Absolute name of the cgroup of non-kubernetes components reserved via --system-reserved.",
		value: func(c *kc) pflag.Value { return stringVal(&c.SystemReservedCgroup) }},
	{name: "kube-reserved-cgroup", field: "kubeReservedCgroup", usage: "Absolute name of the cgroup of kubernetes components reserved via --kube-reserved.",
		value: func(c *kc) pflag.Value { return stringVal(&c.KubeReservedCgroup) }},
	{name: "memory-manager-policy", field: "memoryManagerPolicy", usage: "Memory manager policy: 'None' or 'Static'.",
		value: func(c *kc) pflag.Value { return stringVal(&c.MemoryManagerPolicy) }},
	{name: "reserved-memory", field: "reservedMemory", usage: "Memory reservations per NUMA node, e.g. --reserved-memory 0:memory=1Gi,hugepages-1M=2Gi --reserved-memory 1:memory=2Gi.",
		value: func(c *kc) pflag.Value { return &reservedMemoryValue{target: &c.ReservedMemory} }},
	{name: "register-node", field: "registerNode", boolean: true, usage: "Register the node with the API server (needs --kubeconfig).",
		value: func(c *kc) pflag.Value { return boolPtr(&c.RegisterNode) }},
	{name: "register-with-taints", field: "registerWithTaints", usage: "Taints to register the node with, as comma-separated <key>=<value>:<effect>; ignored when --register-node=false.",
		value: func(c *kc) pflag.Value { return &taintsValue{target: &c.RegisterWithTaints} }},
	{name: "seccomp-default", field: "seccompDefault", boolean: true, usage: "Use RuntimeDefault as the default seccomp profile of all workloads.",
		value: func(c *kc) pflag.Value { return boolPtr(&c.SeccompDefault) }},
}

// loggingFlags are registered by component-base on the Logging field.
var loggingFlagNames = map[string]bool{
	"logging-format": false, "log-flush-frequency": true, "v": true, "vmodule": true,
	"log-text-split-stream": false, "log-text-info-buffer-size": false,
	"log-json-split-stream": false, "log-json-info-buffer-size": false,
}

// addConfigFlags registers every flag that writes a field of c, bound to c.
func addConfigFlags(fs *pflag.FlagSet, c *kubeletconfigv1beta1.KubeletConfiguration) {
	for _, cf := range configFlags {
		fs.VarP(cf.value(c), cf.name, cf.shorthand, cf.usage)
		f := fs.Lookup(cf.name)
		if cf.boolean {
			f.NoOptDefVal = "true"
		}
		if !cf.current {
			markDeprecated(fs, cf.name, configDeprecation)
		}
	}
	logging := pflag.NewFlagSet("logging", pflag.ContinueOnError)
	logsapi.AddFlags(&c.Logging, logging)
	logging.VisitAll(func(f *pflag.Flag) {
		if !loggingFlagNames[f.Name] {
			f.Deprecated = configDeprecation
		}
	})
	fs.AddFlagSet(logging)
	// The JSON log format is not built in; keep its flags so units using them start.
	for _, name := range []string{"log-json-split-stream", "log-json-info-buffer-size"} {
		if fs.Lookup(name) == nil {
			if strings.HasSuffix(name, "stream") {
				fs.Bool(name, false, "[Alpha] JSON log format option (the JSON format is not built into this kubelet).")
				fs.Lookup(name).NoOptDefVal = "true"
			} else {
				fs.String(name, "", "[Alpha] JSON log format option (the JSON format is not built into this kubelet).")
			}
			markDeprecated(fs, name, configDeprecation)
		}
	}
}

// flagField maps a config-backed flag to the top-level field it writes;
// ok is false for flag-only flags.
func flagField(name string) (field string, ok bool) {
	for _, cf := range configFlags {
		if cf.name == name {
			return cf.field, true
		}
	}
	if _, isLogging := loggingFlagNames[name]; isLogging {
		if name == "log-json-split-stream" || name == "log-json-info-buffer-size" {
			return "", false // not wired: no JSON format
		}
		return "logging", true
	}
	return "", false
}

// newFlagSet builds the kubelet's flag set bound to f and c.
func newFlagSet(f *KubeletFlags, c *kubeletconfigv1beta1.KubeletConfiguration) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	// Parse reports errors and deprecations itself (see warnings).
	fs.SetOutput(io.Discard)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SortFlags = true
	addFlagOnlyFlags(fs, f)
	addConfigFlags(fs, c)
	return fs
}

// computeUnsupportedFlags derives UnsupportedFlags from the registration
// tables and SupportedConfigFields without building a flag set.
func computeUnsupportedFlags() []string {
	names := map[string]bool{}
	for name := range unsupportedFlagOnly {
		names[name] = true
	}
	for _, cf := range configFlags {
		names[cf.name] = true
	}
	for name := range loggingFlagNames {
		names[name] = true
	}
	var out []string
	for name := range names {
		if flagUnsupported(name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func flagUnsupported(name string) bool {
	if unsupportedFlagOnly[name] {
		return true
	}
	if name == "log-json-split-stream" || name == "log-json-info-buffer-size" {
		return true
	}
	field, ok := flagField(name)
	return ok && !SupportedConfigFields[field]
}
