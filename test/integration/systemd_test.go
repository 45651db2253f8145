//go:build integration

package integration

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/seed-kubelet/kubelet/internal/node/cgroups"
	"github.com/seed-kubelet/kubelet/test/integration/framework"
	"github.com/seed-kubelet/kubelet/test/systemdstandin"
)

// sliceOf is the systemd unit name of a cgroup given in cgroupfs form.
func sliceOf(cgroupfsPath string) string {
	return path.Base(cgroups.ParseCgroupfs(cgroupfsPath).Systemd())
}

// lastProps returns the properties of the last call of method on unit.
func lastProps(calls []systemdstandin.Call, method, unit string) (map[string]any, bool) {
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Method == method && calls[i].Unit == unit {
			return calls[i].Props, true
		}
	}
	return nil, false
}

func wantProps(t *testing.T, calls []systemdstandin.Call, method, unit string, want map[string]any) {
	t.Helper()
	got, ok := lastProps(calls, method, unit)
	if !ok {
		t.Errorf("no %s of %s", method, unit)
		return
	}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("%s %s: %s = %v, want %v (all: %v)", method, unit, k, got[k], v, got)
		}
	}
}

// The systemd cgroup driver against a real dbus-daemon and a systemd
// stand-in on it (test/systemdstandin), on a containerd of the test's own
// whose runc uses the systemd driver too (in a mount namespace that shows
// /run/systemd/system, which runc insists on): the kubelet creates
// kubepods.slice, the QoS slices and each pod's slice as transient units
// with upstream's properties and values, runc puts each container's scope
// in its pod's slice through the same bus, and a deleted pod's slice is
// stopped.
func TestSystemdCgroupDriver(t *testing.T) {
	dir, err := os.MkdirTemp("", "sd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bus, err := systemdstandin.StartBus(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	mounts, err := systemdstandin.HostV1Mounts()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := systemdstandin.Start(systemdstandin.Config{Address: bus.Address, Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sd.Close)

	// The suite's runtime decides which containerd this test starts: 1.6,
	// or 2.x (which also reports its systemd driver in RuntimeConfig).
	env := []string{"PRIVATE_CONTAINERD_SYSTEMD_BUS=" + bus.Address}
	rs, _ := framework.NewCRIClient(t)
	if v, err := rs.Version(framework.Ctx(t), &runtimeapi.VersionRequest{}); err == nil && strings.HasPrefix(strings.TrimPrefix(v.RuntimeVersion, "v"), "2.") {
		env = append(env, "PRIVATE_CONTAINERD_VERSION=2")
	}
	endpoint, pid := framework.PrivateContainerd(t, strings.ToLower(framework.UniqueName("sd")), env...)
	t.Setenv("CONTAINER_RUNTIME_ENDPOINT", endpoint)

	k := framework.NewKubelet(t, "cgroupDriver: systemd", "podPidsLimit: 100", "systemReserved: {cpu: 500m, memory: 1Gi}")
	// cgroupRoot "/seed-node-x" is the slice seed_node_x.slice with this
	// driver; an administrator (here the stand-in) made it.
	root := sliceOf(k.CgroupRoot)
	if err := sd.CreateSlice(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sd.StopSlice(root); err != nil {
			t.Errorf("stop %s: %v", root, err)
		}
	})
	// systemd does not realise cpuset for a slice on cgroup v1, but the
	// kubelet (as upstream's) wants cgroupRoot in cpuset too: on a real
	// node the administrator makes that directory.
	if err := os.MkdirAll(filepath.Join(mounts["cpuset"], mustSlicePath(t, root)), 0o755); err != nil {
		t.Fatal(err)
	}
	k.Wrapper = []string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", pid), "--"}
	k.Env = []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus.Address}
	k.WriteManifest("guaranteed.yaml", resourcePod("guaranteed", `    resources:
      limits: {cpu: 250m, memory: 64Mi}`, "sleep 3600", "Always"))
	k.WriteManifest("burstable.yaml", resourcePod("burstable", `    resources:
      requests: {cpu: 100m}`, "sleep 3600", "Always"))
	k.WriteManifest("besteffort.yaml", resourcePod("besteffort", "", "sleep 3600", "Always"))
	k.Start()
	g := k.WaitForPod("guaranteed", podTimeout, "running", running)
	b := k.WaitForPod("burstable", podTimeout, "running", running)
	be := k.WaitForPod("besteffort", podTimeout, "running", running)

	kubepods := path.Join(k.CgroupRoot, "kubepods")
	kpSlice := sliceOf(kubepods)
	burstable, bestEffort := sliceOf(path.Join(kubepods, "burstable")), sliceOf(path.Join(kubepods, "besteffort"))
	gSlice := sliceOf(path.Join(kubepods, "pod"+string(g.UID)))
	bSlice := sliceOf(path.Join(kubepods, "burstable", "pod"+string(b.UID)))
	beSlice := sliceOf(path.Join(kubepods, "besteffort", "pod"+string(be.UID)))
	if want := strings.ReplaceAll(strings.TrimPrefix(k.CgroupRoot, "/"), "-", "_") + "-kubepods-burstable-pod" + strings.ReplaceAll(string(b.UID), "-", "_") + ".slice"; bSlice != want {
		t.Fatalf("burstable pod slice %q, want %q", bSlice, want)
	}
	calls := sd.Calls()
	units := sd.Units()
	count := map[string]int{}
	for _, c := range calls {
		count[c.Method]++
	}
	t.Logf("systemd calls so far %v; units %v", count, units)
	for _, u := range []string{kpSlice, burstable, bestEffort, gSlice, bSlice, beSlice} {
		if !contains(units, u) {
			t.Errorf("unit %s not started through systemd; units %v", u, units)
		}
	}
	// Started as libcontainer starts a slice: its parent wanted, no
	// default dependencies, accounting on.
	for unit, parent := range map[string]string{kpSlice: root, burstable: kpSlice, bestEffort: kpSlice, gSlice: kpSlice, bSlice: burstable, beSlice: bestEffort} {
		wantProps(t, calls, "StartTransientUnit", unit, map[string]any{
			"Wants": []string{parent}, "DefaultDependencies": false, "Description": "libcontainer container " + unit,
			"MemoryAccounting": true, "CPUAccounting": true, "TasksAccounting": true, "BlockIOAccounting": true,
		})
	}
	// Resources by SetUnitProperties, upstream's values.
	wantProps(t, calls, "SetUnitProperties", gSlice, map[string]any{
		"CPUShares": uint64(256), "CPUQuotaPerSecUSec": uint64(250000), "CPUQuotaPeriodUSec": uint64(100000),
		"MemoryLimit": uint64(64 << 20), "TasksMax": uint64(100),
	})
	wantProps(t, calls, "SetUnitProperties", bSlice, map[string]any{"CPUShares": uint64(102), "TasksMax": uint64(100)})
	wantProps(t, calls, "SetUnitProperties", beSlice, map[string]any{"CPUShares": uint64(2), "TasksMax": uint64(100)})
	wantProps(t, calls, "SetUnitProperties", bestEffort, map[string]any{"CPUShares": uint64(2)})
	wantProps(t, calls, "SetUnitProperties", burstable, map[string]any{"CPUShares": uint64(102)})
	wantProps(t, calls, "SetUnitProperties", kpSlice, map[string]any{"MemoryLimit": uint64(memTotal(t) - 1<<30)})
	if p, _ := lastProps(calls, "SetUnitProperties", bSlice); p["MemoryLimit"] != nil || p["CPUQuotaPerSecUSec"] != nil {
		t.Errorf("burstable pod without limits got limits: %v", p)
	}

	// The same values in the cgroup files, at systemd's paths.
	gPath := cgroups.ParseCgroupfs(path.Join(kubepods, "pod"+string(g.UID))).Systemd()
	wantCgroup(t, "cpu", gPath, "cpu.shares", "256")
	wantCgroup(t, "cpu", gPath, "cpu.cfs_quota_us", "25000")
	wantCgroup(t, "memory", gPath, "memory.limit_in_bytes", strconv.Itoa(64<<20))
	wantCgroup(t, "pids", gPath, "pids.max", "100")

	// runc reached the same systemd: each container's scope sits in its
	// pod's slice, with the container's processes in it.
	for p, slice := range map[*v1.Pod]string{g: gSlice, b: bSlice, be: beSlice} {
		cid := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		scope := "cri-containerd-" + cid + ".scope"
		wantProps(t, calls, "StartTransientUnit", scope, map[string]any{"Slice": slice, "Delegate": true})
		procs, err := framework.CgroupFile(t, "memory", path.Join(mustSlicePath(t, slice), scope), "cgroup.procs")
		if err != nil || procs == "" {
			t.Errorf("pod %s: scope %s has no processes (%q, %v)", p.Name, scope, procs, err)
		}
	}

	// A deleted pod's slice is stopped through systemd and its cgroup goes.
	k.RemoveManifest("besteffort.yaml")
	bePath := mustSlicePath(t, beSlice)
	framework.Eventually(t, 60*time.Second, 200*time.Millisecond, "besteffort pod slice stopped", func() (bool, error) {
		_, stopped := lastProps(sd.Calls(), "StopUnit", beSlice)
		return stopped && !framework.CgroupExists(t, bePath), fmt.Errorf("units %v", sd.Units())
	})
	if _, err := os.Stat(filepath.Join(mounts["cpu"], gPath)); err != nil {
		t.Errorf("running pod's slice gone: %v", err)
	}
}

func mustSlicePath(t *testing.T, slice string) string {
	t.Helper()
	p, err := systemdstandin.SlicePath(slice)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
