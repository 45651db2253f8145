package volume

import "testing"

func TestImageVolumeSupport(t *testing.T) {
	cases := []struct {
		name, version string
		ok            bool
	}{
		{"containerd", "1.6.20", false},
		{"containerd", "1.6.20~ds1", false},
		{"containerd", "v1.7.27", false},
		{"containerd", "2.0.4", false},
		{"containerd", "v2.1.0", true},
		{"containerd", "v2.4.2", true},
		{"cri-o", "1.30.2", false},
		{"cri-o", "1.31.0", true},
		{"some-runtime", "0.1", true},
		{"containerd", "devel", true},
	}
	for _, tc := range cases {
		err := ImageVolumeSupport(tc.name, tc.version)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: err %v, want ok=%v", tc.name, tc.version, err, tc.ok)
		}
	}
}
