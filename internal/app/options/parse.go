package options

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Version is the Kubernetes release this kubelet reports. Release builds may
// override it with -ldflags "-X <module>/internal/app/options.Version=vX.Y.Z".
var Version = "v1.36.3"

// Sentinels returned by Parse together with the parsed Options; the caller
// prints Usage() or Options.VersionText() and exits 0.
var (
	ErrHelp    = errors.New("help requested")
	ErrVersion = errors.New("version requested")
)

// Options is the outcome of parsing the command line and config files.
type Options struct {
	// Flags are the flag-only options.
	Flags KubeletFlags
	// Config is the effective, defaulted configuration.
	Config *kubeletconfigv1beta1.KubeletConfiguration
	// Warnings are human-readable lines to log at startup: unsupported flags
	// and fields, and deprecated flags in use.
	Warnings []string
}

// Parse parses the kubelet command line (without the program name) with
// upstream precedence: built-in defaults < --config file < --config-dir
// drop-ins < flags given on the command line. Without --config the legacy
// command-line defaults apply (anonymous auth, AlwaysAllow, read-only port
// 10255). On --help or --version it returns ErrHelp or ErrVersion with the
// Options parsed so far. It does not validate: call Validate.
func Parse(args []string) (*Options, error) {
	flags := NewKubeletFlags()
	cfg := NewDefaultConfig()
	fs := newFlagSet(flags, cfg)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("failed to parse kubelet flag: %w", err)
	}
	if rest := fs.Args(); len(rest) > 0 {
		return nil, fmt.Errorf("unknown command %q: the kubelet accepts only flags", rest[0])
	}
	o := &Options{Flags: *flags, Config: cfg}
	if flags.Help {
		return o, ErrHelp
	}
	if flags.Version == "true" || flags.Version == "raw" {
		return o, ErrVersion
	}

	if flags.ConfigFile != "" || flags.ConfigDir != "" {
		base := cfg
		if flags.ConfigFile != "" {
			loaded, err := LoadConfig(flags.ConfigFile)
			if err != nil {
				return nil, fmt.Errorf("failed to load kubelet config file %q: %w", flags.ConfigFile, err)
			}
			SetDefaults(loaded)
			base = loaded
		}
		if flags.ConfigDir != "" {
			merged, err := MergeDropIns(base, flags.ConfigDir)
			if err != nil {
				return nil, err
			}
			base = merged
		}
		if err := reapplyFlags(base, args); err != nil {
			return nil, err
		}
		o.Config = base
	}
	o.Warnings = warnings(fs, o.Config, flags.ConfigFile == "")
	return o, nil
}

// reapplyFlags writes the flags given on the command line over c, so they
// win over file values; feature gates merge key by key.
func reapplyFlags(c *kubeletconfigv1beta1.KubeletConfiguration, args []string) error {
	fileGates := c.FeatureGates
	fs := newFlagSet(NewKubeletFlags(), c)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("failed to parse kubelet flag: %w", err)
	}
	if len(fileGates) > 0 {
		merged := make(map[string]bool, len(fileGates)+len(c.FeatureGates))
		for k, v := range fileGates {
			merged[k] = v
		}
		if fs.Changed("feature-gates") {
			for k, v := range c.FeatureGates {
				merged[k] = v
			}
		}
		c.FeatureGates = merged
	}
	return nil
}

// warnings lists, in a stable order: one line per unsupported flag that was
// set, one per deprecated (supported) flag that was set, then one per
// unsupported field not already covered by a flag warning.
func warnings(fs *pflag.FlagSet, c *kubeletconfigv1beta1.KubeletConfiguration, legacy bool) []string {
	var out []string
	covered := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) {
		if flagUnsupported(f.Name) {
			out = append(out, unsupportedFlagWarning(f.Name))
			if field, ok := flagField(f.Name); ok {
				covered[field] = true
			}
			return
		}
		if f.Deprecated != "" {
			out = append(out, fmt.Sprintf("flag --%s has been deprecated: %s", f.Name, f.Deprecated))
		}
	})
	for _, name := range unsupportedFields(c, legacy) {
		if !covered[name] {
			out = append(out, unsupportedFieldWarning(name))
		}
	}
	return out
}

// Usage returns the --help text.
func Usage() string {
	fs := newFlagSet(NewKubeletFlags(), NewDefaultConfig())
	var b strings.Builder
	b.WriteString(`The kubelet is the node agent of Kubernetes. It registers the node with the
API server and runs the pods bound to it (and static pods from files or a URL)
through a CRI container runtime, keeping their containers running and healthy.

Usage:
  kubelet [flags]

Flags:
`)
	b.WriteString(fs.FlagUsages())
	return b.String()
}

// VersionInfo describes this build the way upstream's --version=raw does.
func VersionInfo() apimachineryversion.Info {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(Version, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	return apimachineryversion.Info{
		Major:      major,
		Minor:      minor,
		GitVersion: Version,
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// VersionString is the line --version prints, e.g. "Kubernetes v1.36.3".
func VersionString() string { return "Kubernetes " + Version }

// VersionText is what this invocation's --version prints: VersionString(),
// or the full version record for --version=raw.
func (o *Options) VersionText() string {
	if o.Flags.Version == "raw" {
		return fmt.Sprintf("%#v", VersionInfo())
	}
	return VersionString()
}

// ApplyLogging validates cfg.Logging and applies it (-v, --vmodule, format,
// flush frequency) to klog. Call it once, early in main.
func ApplyLogging(cfg *kubeletconfigv1beta1.KubeletConfiguration) error {
	if err := logsapi.ValidateAndApplyAsField(&cfg.Logging, loggingFeatureGate(cfg), field.NewPath("logging")); err != nil {
		return fmt.Errorf("apply logging configuration: %w", err)
	}
	return nil
}
