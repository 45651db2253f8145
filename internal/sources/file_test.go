package sources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

const testNode = "node1"

// manifest returns a pod manifest; uid may be empty.
func manifest(name, image, uid string) string {
	m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n", name)
	if uid != "" {
		m += fmt.Sprintf("  uid: %s\n", uid)
	}
	return m + fmt.Sprintf("spec:\n  containers:\n  - name: c\n    image: %s\n", image)
}

// writeAtomic writes a file the way careful tools do: a hidden temporary
// file renamed into place, so the source never reads half a file.
func writeAtomic(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

type runningFileSource struct {
	out   chan []*v1.Pod
	clock *clocktesting.FakeClock
}

// startFileSource runs a file source into a test channel (or into out when
// it is given) and stops it, checking that it returns, at test end.
func startFileSource(t *testing.T, path string, out chan<- []*v1.Pod) runningFileSource {
	t.Helper()
	r := runningFileSource{clock: clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))}
	if out == nil {
		r.out = make(chan []*v1.Pod)
		out = r.out
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunFileSource(ctx, FileSourceConfig{Path: path, NodeName: testNode, Period: time.Minute, Clock: r.clock, Out: out})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("RunFileSource did not return after its context was cancelled")
		}
	})
	return r
}

// startFileMux runs a file source into a mux.
func startFileMux(t *testing.T, path string) (*PodConfig, runningFileSource) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mux := NewPodConfig(MuxConfig{Context: ctx})
	return mux, startFileSource(t, path, mux.Channel(FileSource))
}

func TestFileSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	mux, _ := startFileMux(t, dir)
	updates := mux.Updates()

	writeAtomic(t, dir, "a.yaml", manifest("a", "busybox", "uid-a"))
	u := expectUpdate(t, updates, ADD, FileSource, "uid-a")
	if got := u.Pods[0]; got.Name != "a-node1" || got.Spec.NodeName != testNode || got.Annotations[podutil.ConfigSourceAnnotationKey] != FileSource {
		t.Fatalf("added pod %s on %q with annotations %v", got.Name, got.Spec.NodeName, got.Annotations)
	}
	// The source is marked seen right after its updates are queued.
	for deadline := time.Now().Add(2 * time.Second); !mux.SeenAllSources(sets.New(FileSource)); {
		if time.Now().After(deadline) {
			t.Fatalf("the file source must be seen once it delivered")
		}
		time.Sleep(time.Millisecond)
	}

	// An edit of a manifest with a fixed UID is an UPDATE.
	writeAtomic(t, dir, "a.yaml", manifest("a", "nginx", "uid-a"))
	u = expectUpdate(t, updates, UPDATE, FileSource, "uid-a")
	if img := u.Pods[0].Spec.Containers[0].Image; img != "nginx" {
		t.Fatalf("updated image = %q, want nginx", img)
	}

	// Without a fixed UID the UID is the content's hash: an edit replaces
	// the pod (REMOVE then ADD), as upstream.
	writeAtomic(t, dir, "b.yaml", manifest("b", "busybox", ""))
	oldB := recvUpdate(t, updates)
	if oldB.Op != ADD || len(oldB.Pods) != 1 || oldB.Pods[0].Name != "b-node1" {
		t.Fatalf("want ADD of b-node1, got %v %v", oldB.Op, namesOf(oldB.Pods))
	}
	writeAtomic(t, dir, "b.yaml", manifest("b", "nginx", ""))
	expectUpdate(t, updates, REMOVE, FileSource, oldB.Pods[0].UID)
	newB := recvUpdate(t, updates)
	if newB.Op != ADD || len(newB.Pods) != 1 || newB.Pods[0].UID == oldB.Pods[0].UID || newB.Pods[0].Name != "b-node1" {
		t.Fatalf("want ADD of b-node1 with a new UID, got %v %v %v", newB.Op, namesOf(newB.Pods), uidsOf(newB.Pods))
	}

	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	expectUpdate(t, updates, REMOVE, FileSource, "uid-a")
}

func TestFileSourceSkipsBadManifests(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "good.yaml", manifest("good", "busybox", ""))
	writeAtomic(t, dir, "bad-syntax.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [oops\n")
	writeAtomic(t, dir, "bad-kind.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
	writeAtomic(t, dir, "bad-invalid.yaml", manifest("fixed", `""`, ""))
	writeAtomic(t, dir, ".hidden.yaml", manifest("hidden", "busybox", ""))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "sub"), "nested.yaml", manifest("nested", "busybox", ""))

	mux, _ := startFileMux(t, dir)
	updates := mux.Updates()
	added := recvUpdate(t, updates)
	if added.Op != ADD || !reflect.DeepEqual(namesOf(added.Pods), []string{"default/good-node1"}) {
		t.Fatalf("first update = %v %v, want ADD of only default/good-node1", added.Op, namesOf(added.Pods))
	}

	writeAtomic(t, dir, "bad-invalid.yaml", manifest("fixed", "busybox", ""))
	fixed := recvUpdate(t, updates)
	if fixed.Op != ADD || !reflect.DeepEqual(namesOf(fixed.Pods), []string{"default/fixed-node1"}) {
		t.Fatalf("after the fix got %v %v, want ADD of only default/fixed-node1", fixed.Op, namesOf(fixed.Pods))
	}
}

func TestFileSourceReadsListsAndDocumentsInNameOrder(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "a.yaml", manifest("x", "busybox", "")+"---\n"+
		"apiVersion: v1\nkind: PodList\nitems:\n"+
		"- metadata: {name: p}\n  spec: {containers: [{name: c, image: busybox}]}\n"+
		"- metadata: {name: q}\n  spec: {containers: [{name: c, image: busybox}]}\n")
	writeAtomic(t, dir, "b.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	// c.yml redefines x: the pod from a.yaml (earlier by name) wins.
	writeAtomic(t, dir, "c.yml", manifest("x", "nginx", ""))

	src := startFileSource(t, dir, nil)
	pods := recvSnapshot(t, src.out)
	want := []string{"default/x-node1", "default/p-node1", "default/q-node1", "default/j-node1"}
	if got := namesOf(pods); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot = %v, want %v", got, want)
	}
	if img := pods[0].Spec.Containers[0].Image; img != "busybox" {
		t.Errorf("duplicate x: kept image %q, want busybox from a.yaml", img)
	}
}

func TestFileSourceSingleFilePath(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "one.yaml", manifest("one", "busybox", "uid-one"))
	writeAtomic(t, dir, "other.yaml", manifest("other", "busybox", ""))
	src := startFileSource(t, filepath.Join(dir, "one.yaml"), nil)

	if got := namesOf(recvSnapshot(t, src.out)); !reflect.DeepEqual(got, []string{"default/one-node1"}) {
		t.Fatalf("snapshot = %v, want only default/one-node1", got)
	}
	writeAtomic(t, dir, "one.yaml", manifest("one", "nginx", "uid-one"))
	for {
		pods := recvSnapshot(t, src.out)
		if got := namesOf(pods); !reflect.DeepEqual(got, []string{"default/one-node1"}) {
			t.Fatalf("snapshot = %v, want only default/one-node1", got)
		}
		if pods[0].Spec.Containers[0].Image == "nginx" {
			break
		}
	}
}

func TestFileSourceMissingPathIsRetried(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "manifests") // not even the parent exists
	src := startFileSource(t, dir, nil)
	if pods := recvSnapshot(t, src.out); len(pods) != 0 {
		t.Fatalf("missing path: snapshot = %v, want empty", namesOf(pods))
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, dir, "a.yaml", manifest("a", "busybox", ""))
	src.clock.Step(time.Minute) // nothing could be watched: the periodic relist finds it
	if got := namesOf(recvSnapshot(t, src.out)); !reflect.DeepEqual(got, []string{"default/a-node1"}) {
		t.Fatalf("after the path appeared: snapshot = %v", got)
	}

	// The directory is watched now.
	writeAtomic(t, dir, "b.yaml", manifest("b", "busybox", ""))
	if got := namesOf(recvSnapshot(t, src.out)); !reflect.DeepEqual(got, []string{"default/a-node1", "default/b-node1"}) {
		t.Fatalf("after a new file: snapshot = %v", got)
	}
}

func TestFileSourceKeepsLastGoodUntilPeriodicRelist(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "a.yaml", manifest("a", "busybox", ""))
	src := startFileSource(t, dir, nil)
	first := recvSnapshot(t, src.out)
	if len(first) != 1 {
		t.Fatalf("snapshot = %v, want one pod", namesOf(first))
	}

	// A manifest that breaks (say, caught half written) keeps its pod...
	writeAtomic(t, dir, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [half")
	kept := recvSnapshot(t, src.out)
	if len(kept) != 1 || kept[0].UID != first[0].UID {
		t.Fatalf("after breaking the manifest: snapshot = %v, want the previous pod", uidsOf(kept))
	}
	// ...until the next full relist drops it.
	src.clock.Step(time.Minute)
	for pods := recvSnapshot(t, src.out); len(pods) != 0; pods = recvSnapshot(t, src.out) {
		if pods[0].UID != first[0].UID {
			t.Fatalf("unexpected pod %v", uidsOf(pods))
		}
	}
}

func TestAssembleSnapshot(t *testing.T) {
	pod := func(name, uid string) *v1.Pod { return testPod(uid, name) }
	broken := errors.New("broken")
	tests := []struct {
		name         string
		results      []manifestResult
		lastGood     map[string][]*v1.Pod
		keepLastGood bool
		wantUIDs     []types.UID
		wantGood     []string
		wantProblems map[string]bool // path -> keptLastGood
	}{
		{
			name:     "all good, in order",
			results:  []manifestResult{{path: "a", pods: []*v1.Pod{pod("x", "1"), pod("y", "2")}}, {path: "b", pods: []*v1.Pod{pod("z", "3")}}},
			wantUIDs: []types.UID{"1", "2", "3"}, wantGood: []string{"a", "b"}, wantProblems: map[string]bool{},
		},
		{
			name:     "duplicate name in a later file is skipped and reported",
			results:  []manifestResult{{path: "a", pods: []*v1.Pod{pod("x", "1")}}, {path: "b", pods: []*v1.Pod{pod("x", "2"), pod("w", "4")}}},
			wantUIDs: []types.UID{"1", "4"}, wantGood: []string{"a", "b"}, wantProblems: map[string]bool{"b": false},
		},
		{
			name:     "duplicate UID in a later file is skipped",
			results:  []manifestResult{{path: "a", pods: []*v1.Pod{pod("x", "1")}}, {path: "b", pods: []*v1.Pod{pod("v", "1")}}},
			wantUIDs: []types.UID{"1"}, wantGood: []string{"a", "b"}, wantProblems: map[string]bool{"b": false},
		},
		{
			name:     "broken file contributes nothing on a periodic relist",
			results:  []manifestResult{{path: "a", err: broken}, {path: "b", pods: []*v1.Pod{pod("z", "3")}}},
			lastGood: map[string][]*v1.Pod{"a": {pod("x", "1")}},
			wantUIDs: []types.UID{"3"}, wantGood: []string{"b"}, wantProblems: map[string]bool{"a": false},
		},
		{
			name:         "broken file keeps its last good pods on a watch relist",
			results:      []manifestResult{{path: "a", err: broken}, {path: "b", pods: []*v1.Pod{pod("z", "3")}}},
			lastGood:     map[string][]*v1.Pod{"a": {pod("x", "1")}},
			keepLastGood: true,
			wantUIDs:     []types.UID{"1", "3"}, wantGood: []string{"a", "b"}, wantProblems: map[string]bool{"a": true},
		},
		{
			name:         "broken file never good contributes nothing even on a watch relist",
			results:      []manifestResult{{path: "a", err: broken}},
			keepLastGood: true,
			wantUIDs:     []types.UID{}, wantGood: []string{}, wantProblems: map[string]bool{"a": false},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, good, problems := assembleSnapshot(tc.results, tc.lastGood, tc.keepLastGood)
			if got := uidsOf(pods); !reflect.DeepEqual(got, tc.wantUIDs) {
				t.Errorf("pods = %v, want %v", got, tc.wantUIDs)
			}
			if got := sets.List(sets.KeySet(good)); !reflect.DeepEqual(got, tc.wantGood) {
				t.Errorf("good = %v, want %v", got, tc.wantGood)
			}
			gotProblems := map[string]bool{}
			for path, p := range problems {
				gotProblems[path] = p.keptLastGood
			}
			if !reflect.DeepEqual(gotProblems, tc.wantProblems) {
				t.Errorf("problems = %v, want %v", gotProblems, tc.wantProblems)
			}
		})
	}
}
