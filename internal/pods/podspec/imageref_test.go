package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

var sha256Hex = strings.Repeat("ab", 32)

func TestImageTag(t *testing.T) {
	tests := []struct {
		name    string
		image   string
		wantTag string
		wantOK  bool
	}{
		{"bare name means latest", "busybox", "latest", true},
		{"explicit latest", "busybox:latest", "latest", true},
		{"explicit version", "busybox:1.36", "1.36", true},
		{"digest only has no tag", "busybox@sha256:" + sha256Hex, "", true},
		{"tag and digest keep the tag", "busybox:1.36@sha256:" + sha256Hex, "1.36", true},
		{"registry with port, no tag", "localhost:5000/img", "latest", true},
		{"registry with port and tag", "localhost:5000/img:1", "1", true},
		{"nested path on a registry", "registry.k8s.io/sig/pause:3.10", "3.10", true},
		{"docker hub library path", "docker.io/library/nginx", "latest", true},
		{"localhost registry without port", "localhost/img", "latest", true},
		{"ipv6 registry", "[::1]:5000/img:2", "2", true},
		{"empty reference", "", "", false},
		{"upper-case repository", "BusyBox", "", false},
		{"upper-case first component is a registry", "Registry/img:3", "3", true},
		{"short digest", "busybox@sha256:abc", "", false},
		{"unknown digest algorithm", "busybox@md5:" + sha256Hex, "", false},
		{"two tag separators", "busybox:1.0:2", "", false},
		{"port-like first component is a registry", "busybox:1/2", "latest", true},
		{"bare 64-hex identifier", sha256Hex, "", false},
		{"too long name", "a/" + strings.Repeat("b", 300), "", false},
		{"leading separator in path", "-busybox", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag, ok := imageTag(tt.image)
			if tag != tt.wantTag || ok != tt.wantOK {
				t.Errorf("imageTag(%q) = (%q, %v), want (%q, %v)", tt.image, tag, ok, tt.wantTag, tt.wantOK)
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		name  string
		image string
		want  v1.PullPolicy
	}{
		{"no tag pulls always", "busybox", v1.PullAlways},
		{"latest tag pulls always", "busybox:latest", v1.PullAlways},
		{"pinned tag pulls if absent", "busybox:1.36", v1.PullIfNotPresent},
		{"digest pulls if absent", "busybox@sha256:" + sha256Hex, v1.PullIfNotPresent},
		{"latest with digest pulls always", "busybox:latest@sha256:" + sha256Hex, v1.PullAlways},
		{"registry port without tag pulls always", "localhost:5000/img", v1.PullAlways},
		{"registry port with tag pulls if absent", "localhost:5000/img:1", v1.PullIfNotPresent},
		{"unparseable reference pulls if absent", "Busy Box", v1.PullIfNotPresent},
		{"empty image pulls if absent", "", v1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultPullPolicy(tt.image); got != tt.want {
				t.Errorf("defaultPullPolicy(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}
