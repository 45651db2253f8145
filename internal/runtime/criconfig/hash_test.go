package criconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestContainerHash(t *testing.T) {
	base := v1.Container{Name: "test_container", Image: "foo/image:v1", Command: []string{"/bin/testcmd"}}
	tests := []struct {
		name     string
		mutate   func(*v1.Container)
		wantSame bool
	}{
		{name: "identical spec", mutate: func(*v1.Container) {}, wantSame: true},
		{name: "image change", mutate: func(c *v1.Container) { c.Image = "foo/image:v2" }},
		{name: "name change", mutate: func(c *v1.Container) { c.Name = "other" }},
		// Fields the API forbids changing, or that change in place, do not
		// restart containers (upstream semantics since 1.31).
		{name: "command change is ignored", mutate: func(c *v1.Container) { c.Command = []string{"/bin/other"} }, wantSame: true},
		{name: "resource change is ignored", mutate: func(c *v1.Container) { c.Resources.Limits = rl("cpu", "2") }, wantSame: true},
		{name: "env change is ignored", mutate: func(c *v1.Container) { c.Env = []v1.EnvVar{{Name: "A", Value: "b"}} }, wantSame: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mutate(&c)
			if same := ContainerHash(&base) == ContainerHash(&c); same != tc.wantSame {
				t.Errorf("hash same = %v, want %v", same, tc.wantSame)
			}
		})
	}
}

func TestContainerHashMatchesUpstream(t *testing.T) {
	// Upstream's container_hash_test pins this value for the same name and
	// image; matching it lets either kubelet adopt the other's containers.
	c := &v1.Container{Name: "test_container", Image: "foo/image:v1"}
	if got, want := ContainerHash(c), uint64(0x8e45cbd0); got != want {
		t.Errorf("ContainerHash = %#x, want %#x", got, want)
	}
}
