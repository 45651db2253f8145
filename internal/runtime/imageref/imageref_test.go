package imageref

import (
	"strings"
	"testing"
)

func TestRepository(t *testing.T) {
	tests := []struct {
		name, image, want string
	}{
		{name: "bare name", image: "busybox", want: "docker.io/library/busybox"},
		{name: "bare name with tag", image: "busybox:1.36", want: "docker.io/library/busybox"},
		{name: "docker hub user repo", image: "user/app:v1", want: "docker.io/user/app"},
		{name: "docker.io with library", image: "docker.io/nginx", want: "docker.io/library/nginx"},
		{name: "index.docker.io alias", image: "index.docker.io/user/app", want: "docker.io/user/app"},
		{name: "registry with path", image: "quay.io/coreos/etcd:v3.5", want: "quay.io/coreos/etcd"},
		{name: "registry with port", image: "registry.local:5000/team/app:1", want: "registry.local:5000/team/app"},
		{name: "port without tag", image: "registry.local:5000/app", want: "registry.local:5000/app"},
		{name: "localhost", image: "localhost/app", want: "localhost/app"},
		{name: "digest", image: "gcr.io/p/app@sha256:" + strings.Repeat("a", 64), want: "gcr.io/p/app"},
		{name: "tag and digest", image: "gcr.io/p/app:1@sha256:" + strings.Repeat("a", 64), want: "gcr.io/p/app"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Repository(tc.image); got != tc.want {
				t.Errorf("Repository(%q) = %q, want %q", tc.image, got, tc.want)
			}
		})
	}
}
