package cri

import "testing"

func TestTarget(t *testing.T) {
	cases := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "unix url", in: "unix:///run/containerd/containerd.sock", want: "unix:///run/containerd/containerd.sock"},
		{name: "bare path", in: "/run/crio/crio.sock", want: "unix:///run/crio/crio.sock"},
		{name: "tcp refused", in: "tcp://127.0.0.1:1234", wantErr: true},
		{name: "no path", in: "unix://", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Target(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Target(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("Target(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
