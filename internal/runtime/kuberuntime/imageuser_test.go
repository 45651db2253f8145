package kuberuntime

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImageUser(t *testing.T) {
	cases := []struct {
		name     string
		img      *runtimeapi.Image
		wantUID  *int64
		wantName string
	}{
		{name: "numeric user", img: &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 1000}}, wantUID: ptr(1000)},
		{name: "explicit root", img: &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 0}}, wantUID: ptr(0)},
		{name: "user name", img: &runtimeapi.Image{Username: "nobody"}, wantName: "nobody"},
		{name: "no user runs as root", img: &runtimeapi.Image{}, wantUID: ptr(0)},
		{name: "no image status", wantUID: ptr(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uid, name := ImageUser(tc.img)
			if name != tc.wantName || (uid == nil) != (tc.wantUID == nil) || (uid != nil && *uid != *tc.wantUID) {
				t.Fatalf("ImageUser = %v, %q; want %v, %q", uid, name, tc.wantUID, tc.wantName)
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }
