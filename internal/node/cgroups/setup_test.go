package cgroups

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/node/hostinfo"
)

// runtimeDriver answers RuntimeConfig with a driver, or err.
type runtimeDriver struct {
	driver runtimeapi.CgroupDriver
	err    error
}

func (r runtimeDriver) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest, ...grpc.CallOption) (*runtimeapi.RuntimeConfigResponse, error) {
	if r.err != nil {
		return nil, r.err
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: r.driver}}, nil
}

func TestRuntimeDriver(t *testing.T) {
	cases := []struct {
		name       string
		rt         runtimeDriver
		configured Driver
		want       Driver
	}{
		{"runtime says systemd", runtimeDriver{driver: runtimeapi.CgroupDriver_SYSTEMD}, DriverCgroupfs, DriverSystemd},
		{"runtime says cgroupfs", runtimeDriver{driver: runtimeapi.CgroupDriver_CGROUPFS}, DriverSystemd, DriverCgroupfs},
		{"unimplemented", runtimeDriver{err: status.Error(codes.Unimplemented, "no")}, DriverSystemd, DriverSystemd},
		{"unreachable", runtimeDriver{err: errors.New("down")}, DriverCgroupfs, DriverCgroupfs},
	}
	for _, c := range cases {
		if got := RuntimeDriver(context.Background(), c.rt, c.configured); got != c.want {
			t.Errorf("%s: driver %s, want %s", c.name, got, c.want)
		}
	}
}

func TestSetup(t *testing.T) {
	machine := hostinfo.Machine{NumCPU: 2, MemoryCapacity: 4 << 30}
	base := func(t *testing.T, rec *fakeRecorder) (SetupConfig, string) {
		fs, dir := fakeV1(t, DriverCgroupfs, "/")
		return SetupConfig{
			Runtime: runtimeDriver{err: status.Error(codes.Unimplemented, "no")}, CgroupsPerQOS: true,
			EnforceNodeAllocatable: []string{"pods"}, Machine: machine, NodeName: "n1",
			Recorder: rec, Clock: clocktesting.NewFakeClock(time.Unix(0, 0)),
			Layout:         hostinfo.Cgroups{Root: dir, Mounts: fs.Mounts},
			SystemdRunning: func() bool { return false },
		}, dir
	}

	t.Run("cgroup v1 refused by default", func(t *testing.T) {
		cfg, _ := base(t, &fakeRecorder{})
		cfg.FailCgroupV1 = true
		if _, err := Setup(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "cgroup v1") {
			t.Fatalf("err = %v, want the cgroup v1 refusal", err)
		}
	})
	t.Run("cgroup v1 allowed", func(t *testing.T) {
		rec := &fakeRecorder{}
		cfg, dir := base(t, rec)
		m, err := Setup(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Enabled() || m.CgroupV2() {
			t.Errorf("enabled %v, v2 %v", m.Enabled(), m.CgroupV2())
		}
		if !rec.has("Warning CgroupV1 " + cgroupV1Message) {
			t.Errorf("events %v, want the CgroupV1 warning", rec.events)
		}
		// cgroupRoot defaults to "/" and kubepods is sized from the machine.
		if got := read(t, filepath.Join(dir, "memory", "kubepods", "memory.limit_in_bytes")); got != "4294967296" {
			t.Errorf("kubepods memory limit = %s", got)
		}
	})
	t.Run("systemd driver without systemd", func(t *testing.T) {
		cfg, _ := base(t, &fakeRecorder{})
		cfg.Runtime = runtimeDriver{driver: runtimeapi.CgroupDriver_SYSTEMD}
		if _, err := Setup(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "systemd is not running") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no cgroups", func(t *testing.T) {
		cfg, _ := base(t, &fakeRecorder{})
		cfg.LayoutErr = hostinfo.ErrNoCgroups
		if _, err := Setup(context.Background(), cfg); !errors.Is(err, hostinfo.ErrNoCgroups) {
			t.Fatalf("cgroupsPerQOS without cgroups: err = %v", err)
		}
		cfg.CgroupsPerQOS = false
		m, err := Setup(context.Background(), cfg)
		if err != nil || m.Enabled() {
			t.Fatalf("without cgroupsPerQOS: enabled %v, err %v", m != nil && m.Enabled(), err)
		}
	})
}

func TestCapacity(t *testing.T) {
	c := Capacity(hostinfo.Machine{NumCPU: 3, MemoryCapacity: 1 << 30})
	if q := c["cpu"]; q.MilliValue() != 3000 {
		t.Errorf("cpu = %v", &q)
	}
	if _, ok := c[PidResource]; ok {
		t.Error("pid capacity without a PID limit")
	}
	if q := Capacity(hostinfo.Machine{MaxPIDs: 4096})[PidResource]; q.Value() != 4096 {
		t.Errorf("pid = %v", &q)
	}
}
