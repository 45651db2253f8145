package evictionapi

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal names a resource the eviction manager watches.
type Signal string

// The signals upstream's kubelet accepts on Linux.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// Resources the manager reclaims besides memory and ephemeral storage.
const (
	ResourceInodes v1.ResourceName = "inodes"
	ResourcePids   v1.ResourceName = "pids"
)

// signalResource is the resource each signal measures; a signal missing
// here is not accepted.
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:            v1.ResourceMemory,
	SignalAllocatableMemoryAvailable: v1.ResourceMemory,
	SignalNodeFsAvailable:            v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           ResourceInodes,
	SignalImageFsAvailable:           v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree:          ResourceInodes,
	SignalContainerFsAvailable:       v1.ResourceEphemeralStorage,
	SignalContainerFsInodesFree:      ResourceInodes,
	SignalPIDAvailable:               ResourcePids,
}

// ResourceOf is the resource the signal measures, "" for a signal the
// kubelet does not accept.
func ResourceOf(s Signal) v1.ResourceName { return signalResource[s] }

// Signals are the accepted signal names, sorted.
func Signals() []string {
	out := make([]string, 0, len(signalResource))
	for s := range signalResource {
		out = append(out, string(s))
	}
	sort.Strings(out)
	return out
}

// Value is a threshold amount: an absolute quantity, or a fraction (0..1]
// of the signal's capacity when Quantity is nil.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float32
}

// Amount is the value against a capacity.
func (v Value) Amount(capacity resource.Quantity) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*float64(v.Percentage)), resource.BinarySI)
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(float64(v.Percentage)*100, 'g', 6, 64) + "%"
}

// Equal reports whether two values are the same amount in the same form.
func (v Value) Equal(o Value) bool {
	if (v.Quantity == nil) != (o.Quantity == nil) {
		return false
	}
	if v.Quantity != nil {
		return v.Quantity.Cmp(*o.Quantity) == 0
	}
	return v.Percentage == o.Percentage
}

// Threshold is met when the signal's available amount drops below Value.
// A zero GracePeriod makes it hard (act at once); soft thresholds act once
// met for GracePeriod.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	// MinReclaim, when set, keeps the threshold met until Value+MinReclaim
	// is available again.
	MinReclaim *Value
}

// Hard reports whether the threshold acts without a grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// Key identifies a threshold among the configured ones (a soft threshold
// with a zero grace period acts as a hard one, as upstream).
type Key struct {
	Signal Signal
	Grace  time.Duration
	Value  string
}

// Key is the threshold's identity.
func (t Threshold) Key() Key { return Key{t.Signal, t.GracePeriod, t.Value.String()} }

func (t Threshold) String() string {
	kind := "hard"
	if !t.Hard() {
		kind = "soft, grace period " + t.GracePeriod.String()
	}
	return fmt.Sprintf("%s<%s (%s)", t.Signal, t.Value, kind)
}

// ThresholdConfig is the KubeletConfiguration's eviction settings.
type ThresholdConfig struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim map[string]string
	// EnforceNodeAllocatable is enforceNodeAllocatable: with "pods", the
	// hard memory.available threshold also applies to the pods' cgroup as
	// allocatableMemory.available, as upstream does.
	EnforceNodeAllocatable []string
}

// ParseThresholds turns the eviction settings into thresholds, hard ones
// first, each list sorted by signal. containerfs signals are returned in
// ignored: upstream derives them from nodefs/imagefs and ignores explicit
// ones too.
func ParseThresholds(c ThresholdConfig) (thresholds []Threshold, ignored []string, err error) {
	hard, err := parseStatements("evictionHard", c.Hard)
	if err != nil {
		return nil, nil, err
	}
	soft, err := parseStatements("evictionSoft", c.Soft)
	if err != nil {
		return nil, nil, err
	}
	for i := range soft {
		s := string(soft[i].Signal)
		raw, ok := c.SoftGracePeriod[s]
		if !ok {
			return nil, nil, fmt.Errorf("evictionSoftGracePeriod: grace period must be specified for the soft eviction threshold %s", s)
		}
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 {
			return nil, nil, fmt.Errorf("evictionSoftGracePeriod[%s]: invalid duration %q, want a positive value such as 1m30s", s, raw)
		}
		soft[i].GracePeriod = d
	}
	for s, raw := range c.SoftGracePeriod {
		if _, ok := signalResource[Signal(s)]; !ok {
			return nil, nil, fmt.Errorf("evictionSoftGracePeriod: unsupported eviction signal %s", s)
		}
		if _, err := time.ParseDuration(raw); err != nil {
			return nil, nil, fmt.Errorf("evictionSoftGracePeriod[%s]: invalid duration %q", s, raw)
		}
	}
	reclaims := map[Signal]Value{}
	for _, s := range sortedKeys(c.MinimumReclaim) {
		sig := Signal(s)
		if _, ok := signalResource[sig]; !ok {
			return nil, nil, fmt.Errorf("evictionMinimumReclaim: unsupported eviction signal %s", s)
		}
		v, err := ParseValue(c.MinimumReclaim[s])
		if err != nil {
			return nil, nil, fmt.Errorf("evictionMinimumReclaim[%s]: %w: %q", s, err, c.MinimumReclaim[s])
		}
		if v.Quantity == nil && v.Percentage <= 0 {
			return nil, nil, fmt.Errorf("evictionMinimumReclaim[%s]: percentage must be positive: %s", s, c.MinimumReclaim[s])
		}
		reclaims[sig] = v
	}
	all := append(hard, soft...)
	for _, t := range all {
		if t.Signal == SignalContainerFsAvailable || t.Signal == SignalContainerFsInodesFree {
			ignored = append(ignored, string(t.Signal))
			continue
		}
		if r, ok := reclaims[t.Signal]; ok {
			r := r
			t.MinReclaim = &r
		}
		thresholds = append(thresholds, t)
	}
	for _, k := range c.EnforceNodeAllocatable {
		if k != "pods" {
			continue
		}
		for _, t := range thresholds {
			if t.Signal == SignalMemoryAvailable && t.Hard() {
				t.Signal = SignalAllocatableMemoryAvailable
				thresholds = append(thresholds, t)
				break
			}
		}
		break
	}
	return thresholds, ignored, nil
}

// parseStatements parses signal→value; 0% and 100% disable a signal, as
// upstream.
func parseStatements(field string, m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, s := range sortedKeys(m) {
		sig := Signal(s)
		if _, ok := signalResource[sig]; !ok {
			return nil, fmt.Errorf("%s: unsupported eviction signal %s", field, s)
		}
		raw := strings.TrimSpace(m[s])
		if raw == "0%" || raw == "100%" {
			continue
		}
		v, err := ParseValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w: %q", field, s, err, raw)
		}
		if v.Quantity != nil && v.Quantity.Sign() <= 0 {
			return nil, fmt.Errorf("%s[%s]: eviction threshold must be positive: %s", field, s, raw)
		}
		out = append(out, Threshold{Signal: sig, Value: v})
	}
	return out, nil
}

// ParseValue reads a threshold amount: a percentage of the signal's
// capacity ("10%", kept as a float32 fraction as upstream parses it, so
// the bytes it stands for match upstream's exactly) or a non-negative
// quantity ("100Mi"). Surrounding spaces are ignored. It is the one parser
// of these values: options validation, the eviction manager and node
// allocatable all use it.
func ParseValue(raw string) (Value, error) {
	raw = strings.TrimSpace(raw)
	if pct, ok := strings.CutSuffix(raw, "%"); ok {
		f, err := strconv.ParseFloat(pct, 32)
		if err != nil {
			return Value{}, errNotAmount
		}
		if f < 0 || f > 100 {
			return Value{}, errors.New("percentage must be between 0% and 100%, inclusive")
		}
		return Value{Percentage: float32(f) / 100}, nil
	}
	q, err := resource.ParseQuantity(raw)
	if err != nil {
		return Value{}, errNotAmount
	}
	if q.Sign() < 0 {
		return Value{}, errors.New("must not be negative")
	}
	return Value{Quantity: &q}, nil
}

var errNotAmount = errors.New("must be a quantity or a percentage such as 10%")

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
