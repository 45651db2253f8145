package app

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

func TestCheckSwap(t *testing.T) {
	header := "Filename\tType\tSize\tUsed\tPriority\n"
	cases := []struct {
		name    string
		fail    bool
		swaps   string
		readErr error
		wantErr bool
	}{
		{name: "no swap"},
		{name: "swap on and failSwapOn", fail: true, swaps: header + "/swapfile file 1024 0 -2", wantErr: true},
		{name: "swap on but allowed", fail: false, swaps: header + "/swapfile file 1024 0 -2"},
		{name: "no /proc/swaps", fail: true, readErr: errors.New("nope")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSwap(tc.fail, func() ([]string, error) {
				if tc.swaps == "" {
					return nil, tc.readErr
				}
				return strings.Split(tc.swaps, "\n"), tc.readErr
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("checkSwap error = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "--fail-swap-on") {
				t.Fatalf("message %q does not say how to fix it", err)
			}
		})
	}
}

func TestNodeIPsFromFlag(t *testing.T) {
	got, err := nodeIPs("10.1.2.3,fd00::1", "ignored")
	if err != nil || len(got) != 2 || got[0] != "10.1.2.3" || got[1] != "fd00::1" {
		t.Fatalf("nodeIPs = %v, %v", got, err)
	}
	if _, err := nodeIPs("not-an-ip", "x"); err == nil {
		t.Fatal("bad --node-ip accepted")
	}
}

// An unspecified --node-ip asks for the detected address, as upstream.
func TestNodeIPsUnspecifiedDetects(t *testing.T) {
	got, err := nodeIPs("0.0.0.0", "localhost")
	if err != nil || len(got) != 1 || net.ParseIP(got[0]) == nil || net.ParseIP(got[0]).IsUnspecified() {
		t.Fatalf("nodeIPs(0.0.0.0) = %v, %v; want a detected address", got, err)
	}
}

func TestCheckCloudProviderAtStart(t *testing.T) {
	if err := checkCloudProvider("external"); err != nil {
		t.Errorf("external refused: %v", err)
	}
	err := checkCloudProvider("gce")
	want := `failed to create kubelet: cloud provider "gce" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider`
	if err == nil || err.Error() != want {
		t.Errorf("checkCloudProvider(gce) = %v, want %q", err, want)
	}
}

// Upstream's start-up check (cmd/kubelet/app/server.go): LimitedSwap
// needs cgroup v2; NoSwap and an unset behaviour start anywhere.
func TestCheckSwapBehavior(t *testing.T) {
	cases := []struct {
		behavior   string
		failSwapOn bool
		cgroupV2   bool
		wantErr    string
	}{
		{behavior: "LimitedSwap", cgroupV2: false, wantErr: "swap feature is enabled and LimitedSwap but it is only supported with cgroupv2"},
		{behavior: "LimitedSwap", cgroupV2: true},
		{behavior: "NoSwap", cgroupV2: false},
		{behavior: "", failSwapOn: false, cgroupV2: false},
		{behavior: "", failSwapOn: true, cgroupV2: true},
	}
	for _, tc := range cases {
		err := checkSwapBehavior(tc.behavior, tc.failSwapOn, tc.cgroupV2)
		if got := fmt.Sprint(err); (tc.wantErr == "" && err != nil) || (tc.wantErr != "" && got != tc.wantErr) {
			t.Errorf("checkSwapBehavior(%q, failSwapOn=%v, v2=%v) = %v, want %q", tc.behavior, tc.failSwapOn, tc.cgroupV2, err, tc.wantErr)
		}
	}
}
