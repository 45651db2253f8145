package options

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// scalarValue is a pflag.Value writing a plain (non-pointer) field.
type scalarValue[T any] struct {
	target *T
	parse  func(string) (T, error)
	show   func(T) string
	typ    string
}

func (v *scalarValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.target = x
	return nil
}

func (v *scalarValue[T]) String() string { return v.show(*v.target) }
func (v *scalarValue[T]) Type() string   { return v.typ }

// optionalValue is a pflag.Value writing a pointer field; Set allocates, so a
// flag never aliases memory shared with another configuration.
type optionalValue[T any] struct {
	target **T
	parse  func(string) (T, error)
	show   func(T) string
	typ    string
}

func (v *optionalValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.target = &x
	return nil
}

func (v *optionalValue[T]) String() string {
	if *v.target == nil {
		return ""
	}
	return v.show(**v.target)
}
func (v *optionalValue[T]) Type() string { return v.typ }

func parseBool(s string) (bool, error) { return strconv.ParseBool(s) }
func parseString(s string) (string, error) {
	return s, nil
}
func parseInt32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 0, 32)
	return int32(n), err
}
func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 0, 64) }
func parseDuration(s string) (metav1.Duration, error) {
	d, err := time.ParseDuration(s)
	return metav1.Duration{Duration: d}, err
}

func showBool(b bool) string                { return strconv.FormatBool(b) }
func showString(s string) string            { return s }
func showInt32(n int32) string              { return strconv.FormatInt(int64(n), 10) }
func showInt64(n int64) string              { return strconv.FormatInt(n, 10) }
func showDuration(d metav1.Duration) string { return d.Duration.String() }

func boolVal(p *bool) pflag.Value {
	return &scalarValue[bool]{p, parseBool, showBool, "bool"}
}
func boolPtr(p **bool) pflag.Value {
	return &optionalValue[bool]{p, parseBool, showBool, "bool"}
}
func stringVal(p *string) pflag.Value {
	return &scalarValue[string]{p, parseString, showString, "string"}
}
func stringPtr(p **string) pflag.Value {
	return &optionalValue[string]{p, parseString, showString, "string"}
}
func int32Val(p *int32) pflag.Value {
	return &scalarValue[int32]{p, parseInt32, showInt32, "int32"}
}
func int32Ptr(p **int32) pflag.Value {
	return &optionalValue[int32]{p, parseInt32, showInt32, "int32"}
}
func int64Val(p *int64) pflag.Value {
	return &scalarValue[int64]{p, parseInt64, showInt64, "int"}
}
func int64Ptr(p **int64) pflag.Value {
	return &optionalValue[int64]{p, parseInt64, showInt64, "int"}
}
func durationVal(p *metav1.Duration) pflag.Value {
	return &scalarValue[metav1.Duration]{p, parseDuration, showDuration, "duration"}
}
func durationPtr(p **metav1.Duration) pflag.Value {
	return &optionalValue[metav1.Duration]{p, parseDuration, showDuration, "duration"}
}

// ipVal accepts only a literal IP address, as upstream's --address does.
func ipVal(p *string) pflag.Value {
	return &scalarValue[string]{p, func(s string) (string, error) {
		if net.ParseIP(strings.TrimSpace(s)) == nil {
			return "", fmt.Errorf("%q is not a valid IP address", s)
		}
		return strings.TrimSpace(s), nil
	}, showString, "ip"}
}

// stringSliceValue splits on commas; the first Set replaces the value held
// before parsing (a default or a file value), later Sets append.
type stringSliceValue struct {
	target  *[]string
	changed bool
}

func (v *stringSliceValue) Set(s string) error {
	var items []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	if !v.changed {
		*v.target = items
		v.changed = true
		return nil
	}
	*v.target = append(*v.target, items...)
	return nil
}
func (v *stringSliceValue) String() string { return "[" + strings.Join(*v.target, ",") + "]" }
func (v *stringSliceValue) Type() string   { return "strings" }

// taintsValue parses "<key>=<value>:<effect>" (or "<key>:<effect>") lists.
type taintsValue struct {
	target  *[]v1.Taint
	changed bool
}

func (v *taintsValue) Set(s string) error {
	taints, err := parseTaints(s)
	if err != nil {
		return err
	}
	if !v.changed {
		*v.target = taints
		v.changed = true
		return nil
	}
	*v.target = append(*v.target, taints...)
	return nil
}

func (v *taintsValue) String() string {
	parts := make([]string, 0, len(*v.target))
	for _, t := range *v.target {
		parts = append(parts, t.ToString())
	}
	return strings.Join(parts, ",")
}
func (v *taintsValue) Type() string { return "[]api.Taint" }

func parseTaints(s string) ([]v1.Taint, error) {
	var taints []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		keyValue, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("invalid taint spec %q: want <key>=<value>:<effect>", spec)
		}
		key, value, _ := strings.Cut(keyValue, "=")
		switch e := v1.TaintEffect(effect); e {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("invalid taint spec %q: effect %q must be one of NoSchedule, PreferNoSchedule, NoExecute", spec, effect)
		}
		if key == "" {
			return nil, fmt.Errorf("invalid taint spec %q: key must not be empty", spec)
		}
		taints = append(taints, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
	}
	return taints, nil
}

// reservedMemoryValue parses "<numa>:<resource>=<quantity>[,<resource>=<quantity>]"
// and may be repeated, one NUMA node per occurrence.
type reservedMemoryValue struct {
	target  *[]kubeletconfigv1beta1.MemoryReservation
	changed bool
}

func (v *reservedMemoryValue) Set(s string) error {
	if !v.changed {
		*v.target = nil
		v.changed = true
	}
	for _, group := range strings.Split(s, ";") {
		group = strings.TrimSpace(group)
		if group == "" {
			continue
		}
		numa, limits, ok := strings.Cut(group, ":")
		if !ok {
			return fmt.Errorf("invalid reserved memory %q: want <numa-node>:<resource>=<quantity>,...", group)
		}
		node, err := strconv.ParseInt(strings.TrimSpace(numa), 10, 32)
		if err != nil {
			return fmt.Errorf("invalid reserved memory %q: NUMA node %q: %w", group, numa, err)
		}
		list := v1.ResourceList{}
		for _, pair := range strings.Split(limits, ",") {
			name, qty, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok {
				return fmt.Errorf("invalid reserved memory %q: want <resource>=<quantity>, got %q", group, pair)
			}
			q, err := resource.ParseQuantity(strings.TrimSpace(qty))
			if err != nil {
				return fmt.Errorf("invalid reserved memory %q: quantity %q: %w", group, qty, err)
			}
			list[v1.ResourceName(strings.TrimSpace(name))] = q
		}
		*v.target = append(*v.target, kubeletconfigv1beta1.MemoryReservation{NumaNode: int32(node), Limits: list})
	}
	return nil
}

func (v *reservedMemoryValue) String() string {
	groups := make([]string, 0, len(*v.target))
	for _, r := range *v.target {
		names := make([]string, 0, len(r.Limits))
		for name := range r.Limits {
			names = append(names, string(name))
		}
		sort.Strings(names)
		pairs := make([]string, 0, len(names))
		for _, name := range names {
			q := r.Limits[v1.ResourceName(name)]
			pairs = append(pairs, name+"="+q.String())
		}
		groups = append(groups, fmt.Sprintf("%d:%s", r.NumaNode, strings.Join(pairs, ",")))
	}
	return strings.Join(groups, ";")
}
func (v *reservedMemoryValue) Type() string { return "reserved-memory" }

// versionValue implements --version, --version=raw and --version=false.
type versionValue struct{ target *string }

func (v *versionValue) Set(s string) error {
	switch {
	case s == "raw":
		*v.target = "raw"
	case strings.HasPrefix(s, "v"):
		*v.target = s
	default:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true, false, raw or vX.Y.Z: %w", err)
		}
		*v.target = strconv.FormatBool(b)
	}
	return nil
}
func (v *versionValue) String() string { return *v.target }
func (v *versionValue) Type() string   { return "version" }
