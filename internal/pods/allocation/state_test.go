package allocation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func reqs(cpuReq, memReq, cpuLim, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{}
	set := func(l *v1.ResourceList, name v1.ResourceName, q string) {
		if q == "" {
			return
		}
		if *l == nil {
			*l = v1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(q)
	}
	set(&r.Requests, v1.ResourceCPU, cpuReq)
	set(&r.Requests, v1.ResourceMemory, memReq)
	set(&r.Limits, v1.ResourceCPU, cpuLim)
	set(&r.Limits, v1.ResourceMemory, memLim)
	return r
}

// testdata/upstream_allocated_pods_state was written by upstream's
// allocation/state checkpoint (v1.36.3) for one pod: ours reads it, and
// writes the same bytes for the same record, so either kubelet can take
// over the other's node.
func TestCheckpointIsUpstreamsFormat(t *testing.T) {
	golden, err := os.ReadFile("testdata/upstream_allocated_pods_state")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, AllocatedFile)
	if err := os.WriteFile(path, golden, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenState(path)
	if err != nil {
		t.Fatal(err)
	}
	want := reqs("100m", "64Mi", "200m", "128Mi")
	got, ok := s.Container("pod-uid-1", "app")
	if !ok || !equalResources(got, want) {
		t.Fatalf("restored %+v %v, want %+v", got, ok, want)
	}

	fresh := filepath.Join(dir, "fresh")
	s2, err := OpenState(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.SetContainer("pod-uid-1", "app", want); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(written)) != strings.TrimSpace(string(golden)) {
		t.Fatalf("wrote\n%s\nwant upstream's\n%s", written, golden)
	}
}

// A restarted kubelet finds what it recorded; a damaged file stops it with
// upstream's advice rather than running pods with unknown resources.
func TestCheckpointSurvivesRestartAndRefusesCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), ActuatedFile)
	s, err := OpenState(path)
	if err != nil {
		t.Fatal(err)
	}
	r := reqs("1", "1Gi", "", "")
	if err := s.SetContainer("u1", "c", r); err != nil {
		t.Fatal(err)
	}
	if err := s.SetContainer("u2", "c", r); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveOrphans(map[types.UID]bool{"u1": true}); err != nil {
		t.Fatal(err)
	}
	again, err := OpenState(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := again.Container("u1", "c"); !ok || !equalResources(got, r) {
		t.Fatalf("after restart: %+v %v", got, ok)
	}
	if _, ok := again.Pod("u2"); ok {
		t.Fatal("an orphan's record survived")
	}
	raw, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), `\"1Gi\"`, `\"2Gi\"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenState(path); err == nil || !strings.Contains(err.Error(), "please drain this node") {
		t.Fatalf("corrupt checkpoint: err %v", err)
	}
}
