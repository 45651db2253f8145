package evictionapi

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		name    string
		in      ThresholdConfig
		want    []string // Threshold.String() of each
		ignored []string
		err     string
	}{
		{
			name: "upstream defaults",
			in:   ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}},
			want: []string{"imagefs.available<15% (hard)", "imagefs.inodesFree<5% (hard)", "memory.available<100Mi (hard)", "nodefs.available<10% (hard)", "nodefs.inodesFree<5% (hard)"},
		},
		{
			name: "soft with grace period and minimum reclaim",
			in: ThresholdConfig{
				Hard: map[string]string{"memory.available": "100Mi"}, Soft: map[string]string{"memory.available": "1Gi"},
				SoftGracePeriod: map[string]string{"memory.available": "1m30s"}, MinimumReclaim: map[string]string{"memory.available": "500Mi"},
			},
			want: []string{"memory.available<100Mi (hard)", "memory.available<1Gi (soft, grace period 1m30s)"},
		},
		{
			name: "allocatable copy of the hard memory threshold",
			in:   ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}, EnforceNodeAllocatable: []string{"pods"}},
			want: []string{"memory.available<100Mi (hard)", "allocatableMemory.available<100Mi (hard)"},
		},
		{
			name: "0% and 100% disable a signal",
			in:   ThresholdConfig{Hard: map[string]string{"nodefs.available": "0%", "imagefs.available": "100%", "pid.available": "1000"}},
			want: []string{"pid.available<1k (hard)"},
		},
		{
			name:    "containerfs is ignored",
			in:      ThresholdConfig{Hard: map[string]string{"containerfs.available": "10%"}},
			ignored: []string{"containerfs.available"},
		},
		{name: "unknown signal", in: ThresholdConfig{Hard: map[string]string{"cpu.available": "1"}}, err: "unsupported eviction signal cpu.available"},
		{name: "soft without grace period", in: ThresholdConfig{Soft: map[string]string{"memory.available": "1Gi"}}, err: "grace period must be specified"},
		{name: "zero quantity", in: ThresholdConfig{Hard: map[string]string{"memory.available": "0"}}, err: "must be positive"},
		{name: "percentage above 100", in: ThresholdConfig{Hard: map[string]string{"nodefs.available": "101%"}}, err: "between 0% and 100%"},
		{name: "bad quantity", in: ThresholdConfig{Hard: map[string]string{"memory.available": "lots"}}, err: "must be a quantity or a percentage"},
		{name: "negative minimum reclaim", in: ThresholdConfig{MinimumReclaim: map[string]string{"memory.available": "-1"}}, err: "must not be negative"},
		{name: "bad grace period", in: ThresholdConfig{Soft: map[string]string{"memory.available": "1Gi"}, SoftGracePeriod: map[string]string{"memory.available": "soon"}}, err: "invalid duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ignored, err := ParseThresholds(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, th := range got {
				s = append(s, th.String())
			}
			if strings.Join(s, ",") != strings.Join(tc.want, ",") {
				t.Errorf("thresholds = %q, want %q", s, tc.want)
			}
			if strings.Join(ignored, ",") != strings.Join(tc.ignored, ",") {
				t.Errorf("ignored = %q, want %q", ignored, tc.ignored)
			}
		})
	}
}

func TestParseThresholdsDetails(t *testing.T) {
	ts, _, err := ParseThresholds(ThresholdConfig{
		Soft: map[string]string{"nodefs.available": "12.5%"}, SoftGracePeriod: map[string]string{"nodefs.available": "2m"},
		MinimumReclaim: map[string]string{"nodefs.available": "1Gi"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 {
		t.Fatalf("got %v", ts)
	}
	th := ts[0]
	if th.Hard() || th.GracePeriod != 2*time.Minute || th.MinReclaim == nil || th.MinReclaim.Quantity.String() != "1Gi" {
		t.Errorf("threshold = %+v", th)
	}
	if got := th.Value.Amount(resource.MustParse("80Gi")); got.Value() != 10<<30 {
		t.Errorf("12.5%% of 80Gi = %s", got.String())
	}
}

// Percentages are float32 fractions, as upstream's parsePercentage makes
// them, and their amount is upstream's GetThresholdQuantity:
// int64(float64(capacity) * float64(fraction)). float64 arithmetic would
// give other bytes (10% of 8Gi: 858993459) and so another allocatable.
func TestParseValue(t *testing.T) {
	const gi = int64(1 << 30)
	cases := []struct {
		raw      string
		capacity int64
		want     int64
		err      string
	}{
		{raw: "10%", capacity: 8 * gi, want: 858993472},
		{raw: "33.3%", capacity: 8 * gi, want: 2860448256},
		{raw: "7.5%", capacity: 20 * gi, want: 1610612800},
		{raw: "0.1%", capacity: 96 * gi, want: 103079220},
		{raw: " 15% ", capacity: 8 * gi, want: 1288490240},
		{raw: "100%", capacity: 8 * gi, want: 8 * gi},
		{raw: "0%", capacity: 8 * gi, want: 0},
		{raw: "100Mi", capacity: 8 * gi, want: 100 << 20},
		{raw: "0", capacity: 8 * gi, want: 0},
		{raw: "101%", err: "percentage must be between 0% and 100%, inclusive"},
		{raw: "-1%", err: "percentage must be between 0% and 100%, inclusive"},
		{raw: "ten%", err: "must be a quantity or a percentage such as 10%"},
		{raw: "lots", err: "must be a quantity or a percentage such as 10%"},
		{raw: "-1Mi", err: "must not be negative"},
	}
	for _, tc := range cases {
		v, err := ParseValue(tc.raw)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseValue(%q) error = %v, want %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseValue(%q): %v", tc.raw, err)
			continue
		}
		if got := v.Amount(*resource.NewQuantity(tc.capacity, resource.BinarySI)); got.Value() != tc.want {
			t.Errorf("ParseValue(%q).Amount(%d) = %d, want %d", tc.raw, tc.capacity, got.Value(), tc.want)
		}
	}
}
