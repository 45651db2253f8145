package criconfig

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestPaths(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{name: "pod log dir", got: PodLogDir("/logs", "ns", "web", types.UID("u1")), want: "/logs/ns_web_u1"},
		{name: "pod log dir default root", got: PodLogDir("", "ns", "web", "u1"), want: "/var/log/pods/ns_web_u1"},
		{name: "first container log", got: ContainerLogPath("app", 0), want: "app/0.log"},
		{name: "restarted container log", got: ContainerLogPath("app", 12), want: "app/12.log"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}
