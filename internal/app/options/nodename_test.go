package options

import (
	"errors"
	"testing"
)

func TestNodeName(t *testing.T) {
	errNoHost := errors.New("no hostname")
	cases := []struct {
		name     string
		override string
		host     string
		hostErr  error
		want     string
		wantErr  bool
	}{
		{"override wins, lowercased and trimmed", "  Node-A.Example ", "ignored", nil, "node-a.example", false},
		{"hostname used without override", "", "Worker-1\n", nil, "worker-1", false},
		{"whitespace-only override is invalid", "   ", "host", nil, "", true},
		{"empty hostname is invalid", "", "  ", nil, "", true},
		{"hostname error is wrapped", "", "", errNoHost, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nodeName(tc.override, func() (string, error) { return tc.host, tc.hostErr })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.hostErr != nil && !errors.Is(err, tc.hostErr) {
				t.Errorf("err = %v does not wrap the hostname error", err)
			}
			if got != tc.want {
				t.Errorf("nodeName = %q, want %q", got, tc.want)
			}
		})
	}
	if name, err := NodeName("Explicit"); err != nil || name != "explicit" {
		t.Errorf("NodeName(Explicit) = %q, %v", name, err)
	}
}
