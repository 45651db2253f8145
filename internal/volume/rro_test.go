package volume

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Upstream's TestResolveRecursiveReadOnly cases (pkg/kubelet/kubelet_pods_test.go).
func TestResolveRecursiveReadOnly(t *testing.T) {
	ro := func(name string, mode v1.RecursiveReadOnlyMode, readOnly bool, prop *v1.MountPropagationMode) v1.VolumeMount {
		return v1.VolumeMount{Name: name, ReadOnly: readOnly, RecursiveReadOnly: ptr.To(mode), MountPropagation: prop}
	}
	cases := []struct {
		m        v1.VolumeMount
		supports bool
		want     bool
		wantErr  string
	}{
		{m: v1.VolumeMount{Name: "rw"}, supports: true},
		{m: v1.VolumeMount{Name: "ro", ReadOnly: true}, supports: true},
		{m: ro("ro", v1.RecursiveReadOnlyDisabled, true, nil), supports: true},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, true, nil), supports: true, want: true},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, true, ptr.To(v1.MountPropagationNone)), supports: true, want: true},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, true, ptr.To(v1.MountPropagationHostToContainer)), supports: true, wantErr: "not compatible with propagation"},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, true, ptr.To(v1.MountPropagationBidirectional)), supports: true, wantErr: "not compatible with propagation"},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, false, nil), supports: true, wantErr: "not read-only"},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, false, nil), supports: false, wantErr: "not read-only"},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, true, nil), supports: true, want: true},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, true, ptr.To(v1.MountPropagationNone)), supports: true, want: true},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, true, ptr.To(v1.MountPropagationHostToContainer)), supports: true, wantErr: "not compatible with propagation"},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, true, ptr.To(v1.MountPropagationBidirectional)), supports: true, wantErr: "not compatible with propagation"},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, false, nil), supports: true, wantErr: "not read-only"},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, false, nil), supports: false, wantErr: "not read-only"},
		{m: ro("rro-if-possible", v1.RecursiveReadOnlyIfPossible, true, nil), supports: false},
		{m: ro("rro", v1.RecursiveReadOnlyEnabled, true, nil), supports: false, wantErr: "not supported by the runtime"},
		{m: ro("invalid", "foo", true, nil), supports: true, wantErr: "unknown recursive read-only mode"},
	}
	for _, tc := range cases {
		got, err := ResolveRecursiveReadOnly(tc.m, tc.supports)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v (runtime supports %v): err %v, want %q", tc.m, tc.supports, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v (runtime supports %v) = %v, %v; want %v", tc.m, tc.supports, got, err, tc.want)
		}
	}
}
