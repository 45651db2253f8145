package userns

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/runtime/critest"
)

func userPod(uid string, hostUsers *bool) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}, Spec: v1.PodSpec{HostUsers: hostUsers}}
}

func newManager(t *testing.T, dir string, handlers ...*runtimeapi.RuntimeHandler) *Manager {
	t.Helper()
	cri := critest.New(t, testingclock.NewFakeClock(time.Unix(0, 0)))
	cri.SetRuntimeHandlers(handlers...)
	m, err := New(Config{PodsDir: dir, MaxPods: 110, FirstID: 65536, Length: 65536 * 200, Runtime: cri.RuntimeClient})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var withUserns = []*runtimeapi.RuntimeHandler{
	{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
	{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
	{Name: "old", Features: &runtimeapi.RuntimeHandlerFeatures{}},
}

// A pod with hostUsers: false gets 65536 IDs of its own, the same after a
// kubelet restart (read back from its directory, upstream's file), never
// a range another pod has, never host ID 0; one without gets the node's.
func TestOptions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	no, yes := false, true
	m := newManager(t, dir, withUserns...)
	for _, hu := range []*bool{nil, &yes} {
		got, err := m.Options(ctx, userPod("host", hu), "")
		if err != nil || got.GetMode() != runtimeapi.NamespaceMode_NODE {
			t.Fatalf("hostUsers %v: %v %v, want NODE", hu, got, err)
		}
	}
	seen := map[uint32]types.UID{}
	for _, uid := range []string{"a", "b", "c"} {
		got, err := m.Options(ctx, userPod(uid, &no), "")
		if err != nil {
			t.Fatal(err)
		}
		if got.Mode != runtimeapi.NamespaceMode_POD || len(got.Uids) != 1 || len(got.Gids) != 1 {
			t.Fatalf("%s: %v", uid, got)
		}
		u := got.Uids[0]
		if u.ContainerId != 0 || u.Length != 65536 || u.HostId < 65536 || u.HostId%65536 != 0 || got.Gids[0].HostId != u.HostId {
			t.Fatalf("%s: mapping %v", uid, got)
		}
		if other, dup := seen[u.HostId]; dup {
			t.Fatalf("%s and %s share host IDs %d", uid, other, u.HostId)
		}
		seen[u.HostId] = types.UID(uid)
	}
	a1, _ := m.Options(ctx, userPod("a", &no), "")
	raw, err := os.ReadFile(filepath.Join(dir, "a", "userns"))
	if err != nil {
		t.Fatal(err)
	}
	var f fileContent
	if err := json.Unmarshal(raw, &f); err != nil || f.UIDMappings[0].HostID != a1.Uids[0].HostId || !strings.Contains(string(raw), `"uidMappings":[{"hostId":`) {
		t.Fatalf("file %s: %v", raw, err)
	}

	// Restart: the same ranges, none handed out twice.
	m2 := newManager(t, dir, withUserns...)
	a2, err := m2.Options(ctx, userPod("a", &no), "")
	if err != nil || a2.Uids[0].HostId != a1.Uids[0].HostId {
		t.Fatalf("after restart: %v %v, want host ID %d", a2, err, a1.Uids[0].HostId)
	}
	if len(m2.usedBy) != 3 {
		t.Fatalf("restored %d ranges, want 3", len(m2.usedBy))
	}
	d, _ := m2.Options(ctx, userPod("d", &no), "")
	if _, dup := seen[d.Uids[0].HostId]; dup {
		t.Fatalf("a range of a pod on disk was handed out again")
	}

	// Released with the pod; orphans cleaned.
	m2.Release("a")
	if _, err := os.Stat(filepath.Join(dir, "a", "userns")); !os.IsNotExist(err) {
		t.Fatalf("released pod's file: %v", err)
	}
	m2.CleanupOrphans(map[types.UID]bool{"b": true})
	if len(m2.usedBy) != 1 {
		t.Fatalf("after cleanup %v, want b only", m2.usedBy)
	}
}

// The runtime decides: containerd 1.6 reports no handlers, a handler may
// lack the feature, an unknown handler is an error; each gives
// upstream's message.
func TestRuntimeWithoutUserNamespaces(t *testing.T) {
	no := false
	ctx := context.Background()
	old := newManager(t, t.TempDir())
	if _, err := old.Options(ctx, userPod("a", &no), ""); err == nil || err.Error() != "can't set `spec.hostUsers: false`, runtime does not support user namespaces" {
		t.Fatalf("containerd 1.6: %v", err)
	}
	m := newManager(t, t.TempDir(), withUserns...)
	if _, err := m.Options(ctx, userPod("a", &no), "old"); err == nil || err.Error() != "can't set `spec.hostUsers: false`, RuntimeClass handler \"old\" does not support user namespaces" {
		t.Fatalf("handler without the feature: %v", err)
	}
	if _, err := m.Options(ctx, userPod("a", &no), "gvisor"); err == nil || !strings.Contains(err.Error(), `the handler "gvisor" is not known`) {
		t.Fatalf("unknown handler: %v", err)
	}
}

// Upstream's checks of the kubelet's range and of a pod's file.
func TestRangeChecks(t *testing.T) {
	cri := critest.New(t, testingclock.NewFakeClock(time.Unix(0, 0)))
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{IDsPerPod: 1000, FirstID: 65536, Length: 65536 * 200}, "kubelet user namespace length 1000 is not a multiple of 65536"},
		{Config{FirstID: 1000, Length: 65536 * 200}, "kubelet user assigned ID 1000 is not a multiple of 65536"},
		{Config{FirstID: 0, Length: 65536 * 200}, "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{Config{FirstID: 65536, Length: 65536 * 100, MaxPods: 110}, "kubelet user assigned IDs are not enough to support 110 pods"},
	} {
		tc.cfg.PodsDir, tc.cfg.Runtime = t.TempDir(), cri.RuntimeClient
		if _, err := New(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "x"), 0o750)
	os.WriteFile(filepath.Join(dir, "x", "userns"), []byte(`{"uidMappings":[{"hostId":131072,"containerId":1,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":1,"length":65536}]}`), 0o644)
	if _, err := New(Config{PodsDir: dir, FirstID: 65536, Length: 65536 * 200, Runtime: cri.RuntimeClient}); err == nil || !strings.Contains(err.Error(), "UID 0 must be mapped") {
		t.Errorf("bad file: %v", err)
	}
}

func TestParseSubIDs(t *testing.T) {
	first, length, err := ParseSubIDs("0: kubelet 65536 2147483648\n")
	if err != nil || first != 65536 || length != 2147483648 {
		t.Fatalf("%d %d %v", first, length, err)
	}
	if _, _, err := ParseSubIDs("0: kubelet 65536 65536\n1: kubelet 200000 65536\n"); err == nil {
		t.Fatal("two ranges accepted")
	}
	if f, l, err := KubeletMappings(0); err != nil || f == 0 || l == 0 {
		t.Fatalf("KubeletMappings: %d %d %v", f, l, err)
	}
}
