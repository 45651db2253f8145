package eviction

import (
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
	resourceInodes v1.ResourceName = "inodes"
	resourcePids   v1.ResourceName = "pids"
)

// signalResource is the resource each signal measures; a signal missing
// here is not accepted.
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:            v1.ResourceMemory,
	SignalAllocatableMemoryAvailable: v1.ResourceMemory,
	SignalNodeFsAvailable:            v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           resourceInodes,
	SignalImageFsAvailable:           v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree:          resourceInodes,
	SignalContainerFsAvailable:       v1.ResourceEphemeralStorage,
	SignalContainerFsInodesFree:      resourceInodes,
	SignalPIDAvailable:               resourcePids,
}

// signalCondition is the node condition a met threshold of the signal sets.
var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:            v1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: v1.NodeMemoryPressure,
	SignalNodeFsAvailable:            v1.NodeDiskPressure,
	SignalNodeFsInodesFree:           v1.NodeDiskPressure,
	SignalImageFsAvailable:           v1.NodeDiskPressure,
	SignalImageFsInodesFree:          v1.NodeDiskPressure,
	SignalContainerFsAvailable:       v1.NodeDiskPressure,
	SignalContainerFsInodesFree:      v1.NodeDiskPressure,
	SignalPIDAvailable:               v1.NodePIDPressure,
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

func (v Value) equal(o Value) bool {
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

// key identifies a threshold among the configured ones (a soft threshold
// with a zero grace period acts as a hard one, as upstream).
type key struct {
	Signal Signal
	Grace  time.Duration
	Value  string
}

func (t Threshold) key() key { return key{t.Signal, t.GracePeriod, t.Value.String()} }

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
		v, err := parseValue(c.MinimumReclaim[s])
		if err != nil {
			return nil, nil, fmt.Errorf("evictionMinimumReclaim[%s]: %w", s, err)
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
		v, err := parseValue(raw)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", field, s, err)
		}
		if v.Quantity != nil && v.Quantity.Sign() <= 0 {
			return nil, fmt.Errorf("%s[%s]: eviction threshold must be positive: %s", field, s, raw)
		}
		out = append(out, Threshold{Signal: sig, Value: v})
	}
	return out, nil
}

// parseValue reads "10%" or a quantity such as "100Mi".
func parseValue(raw string) (Value, error) {
	if pct, ok := strings.CutSuffix(raw, "%"); ok {
		f, err := strconv.ParseFloat(pct, 32)
		if err != nil {
			return Value{}, fmt.Errorf("invalid percentage %q", raw)
		}
		if f < 0 || f > 100 {
			return Value{}, fmt.Errorf("percentage %q must be between 0%% and 100%%", raw)
		}
		return Value{Percentage: float32(f) / 100}, nil
	}
	q, err := resource.ParseQuantity(raw)
	if err != nil {
		return Value{}, fmt.Errorf("invalid quantity %q: %w", raw, err)
	}
	if q.Sign() < 0 {
		return Value{}, fmt.Errorf("quantity %q must not be negative", raw)
	}
	return Value{Quantity: &q}, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
