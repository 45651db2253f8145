package sources

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/seed-kubelet/kubelet/internal/localobjects"
)

const configMapDoc = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  greeting: hello
`

// podUsingConfigMap reads cfg in a volume and in env.
const podUsingConfigMap = `apiVersion: v1
kind: Pod
metadata:
  name: user
spec:
  containers:
  - name: c
    image: busybox
    env:
    - name: GREETING
      valueFrom:
        configMapKeyRef: {name: cfg, key: greeting}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
  volumes:
  - name: cfg
    configMap: {name: cfg}
`

type objectsSnapshot struct {
	entries []localobjects.Entry
	// podsSent is how many pod snapshots had left before these objects.
	podsSent int
}

type runningObjectsSource struct {
	pods    chan []*v1.Pod
	objects chan objectsSnapshot
	clock   *clocktesting.FakeClock
}

// startObjectsSource runs a standalone file source that reads objects.
func startObjectsSource(t *testing.T, path string, objectsOnly bool) runningObjectsSource {
	t.Helper()
	r := runningObjectsSource{pods: make(chan []*v1.Pod, 10), objects: make(chan objectsSnapshot, 10),
		clock: clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cfg := FileSourceConfig{Path: path, NodeName: testNode, Period: time.Minute, Clock: r.clock,
		LocalObjects: true, ObjectsOnly: objectsOnly,
		Objects: func(e []localobjects.Entry) { r.objects <- objectsSnapshot{entries: e, podsSent: len(r.pods)} },
	}
	if !objectsOnly {
		cfg.Out = r.pods
	}
	go func() {
		defer close(done)
		RunFileSource(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

func recvObjects(t *testing.T, ch <-chan objectsSnapshot) objectsSnapshot {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(waitTimeout):
		t.Fatalf("no objects within %v", waitTimeout)
		return objectsSnapshot{}
	}
}

func keysOf(entries []localobjects.Entry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Key.String())
	}
	return out
}

func TestFileSourceReadsLocalObjectsBeforePods(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "app.yaml", podUsingConfigMap+"---\n"+configMapDoc+"---\n"+
		"apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: team}\nstringData: {password: s3cret}\n")
	src := startObjectsSource(t, dir, false)

	objs := recvObjects(t, src.objects)
	if objs.podsSent != 0 {
		t.Fatalf("the objects left after %d pod snapshot(s); they must go first", objs.podsSent)
	}
	if got := keysOf(objs.entries); !reflect.DeepEqual(got, []string{"ConfigMap default/cfg", "Secret team/creds"}) {
		t.Fatalf("objects = %v", got)
	}
	s := objs.entries[1].Object.(*v1.Secret)
	if string(s.Data["password"]) != "s3cret" || s.StringData != nil || s.Type != v1.SecretTypeOpaque || s.Kind != "" {
		t.Errorf("secret not defaulted as the API server would: %+v", s)
	}
	if p := objs.entries[0].Path; !strings.HasSuffix(p, "/app.yaml") {
		t.Errorf("path = %q", p)
	}
	if got := namesOf(recvSnapshot(t, src.pods)); !reflect.DeepEqual(got, []string{"default/user-node1"}) {
		t.Fatalf("pods = %v: a pod may reference a local config map in standalone mode", got)
	}
}

func TestFileSourceInvalidObjectDisturbsNothingElse(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "a.yaml", configMapDoc+"---\n"+manifest("web", "busybox", "")+"---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n")
	src := startObjectsSource(t, dir, false)
	if got := keysOf(recvObjects(t, src.objects).entries); !reflect.DeepEqual(got, []string{"ConfigMap default/cfg"}) {
		t.Fatalf("objects = %v, want the valid one only", got)
	}
	if got := namesOf(recvSnapshot(t, src.pods)); !reflect.DeepEqual(got, []string{"default/web-node1"}) {
		t.Fatalf("pods = %v, want the pod beside the invalid document", got)
	}
}

func TestFileSourceObjectsOnlyIgnoresPods(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "a.yaml", configMapDoc+"---\n"+manifest("web", "busybox", ""))
	src := startObjectsSource(t, dir, true)
	if got := keysOf(recvObjects(t, src.objects).entries); !reflect.DeepEqual(got, []string{"ConfigMap default/cfg"}) {
		t.Fatalf("objects = %v", got)
	}
	if len(src.pods) != 0 {
		t.Fatalf("an objects-only source sent pods")
	}
}

func TestClusterModeRefusesObjectsAndReferences(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, dir, "with-configmap.yaml", manifest("a", "busybox", "")+"---\n"+configMapDoc)
	writeAtomic(t, dir, "referencing.yaml", podUsingConfigMap)
	writeAtomic(t, dir, "plain.yaml", manifest("plain", "busybox", ""))
	src := startFileSource(t, dir, nil)
	if got := namesOf(recvSnapshot(t, src.out)); !reflect.DeepEqual(got, []string{"default/plain-node1"}) {
		t.Fatalf("cluster mode pods = %v, want only the plain pod", got)
	}
	_, err := parseStaticPods([]byte(podUsingConfigMap), staticOrigin{NodeName: testNode, Source: FileSource})
	if err == nil || !strings.Contains(err.Error(), "static pods may not reference configmaps") {
		t.Errorf("cluster mode: err = %v, want upstream's refusal", err)
	}
	_, err = parseStaticPods([]byte(configMapDoc), staticOrigin{NodeName: testNode, Source: FileSource})
	if err == nil || !strings.Contains(err.Error(), "unsupported object v1 ConfigMap") {
		t.Errorf("cluster mode: err = %v, want the ConfigMap refused", err)
	}
}

func TestAssembleObjects(t *testing.T) {
	cmObj := func(name, value string, immutable bool) runtime.Object {
		c := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": value}}
		if immutable {
			c.Immutable = ptr.To(true)
		}
		return c
	}
	key := func(name string) localobjects.Key {
		return localobjects.Key{Kind: localobjects.KindConfigMap, Namespace: "default", Name: name}
	}
	doc := func(i int, obj runtime.Object) objectDoc {
		k, _ := localobjects.KeyOf(obj)
		return objectDoc{index: i, key: k, obj: obj}
	}
	bad := func(i int, name string) objectDoc {
		return objectDoc{index: i, key: key(name), err: errInvalidForTest}
	}
	type want struct {
		values   map[string]string // name -> data k
		problems []string          // paths
	}
	tests := []struct {
		name     string
		results  []manifestResult
		lastGood map[string]map[localobjects.Key]runtime.Object
		keep     bool
		want     want
	}{
		{
			name:    "valid objects of several files",
			results: []manifestResult{{path: "a", objects: []objectDoc{doc(0, cmObj("x", "1", false))}}, {path: "b", objects: []objectDoc{doc(0, cmObj("y", "2", false))}}},
			want:    want{values: map[string]string{"x": "1", "y": "2"}},
		},
		{
			name:    "an invalid new object is left out",
			results: []manifestResult{{path: "a", objects: []objectDoc{bad(0, "x"), doc(1, cmObj("y", "2", false))}}},
			want:    want{values: map[string]string{"y": "2"}, problems: []string{"a"}},
		},
		{
			name:     "an invalid edit keeps the last valid version",
			results:  []manifestResult{{path: "a", objects: []objectDoc{bad(0, "x")}}},
			lastGood: map[string]map[localobjects.Key]runtime.Object{"a": {key("x"): cmObj("x", "1", false)}},
			want:     want{values: map[string]string{"x": "1"}, problems: []string{"a"}},
		},
		{
			name:     "an immutable object that changed keeps its data",
			results:  []manifestResult{{path: "a", objects: []objectDoc{doc(0, cmObj("x", "2", true))}}},
			lastGood: map[string]map[localobjects.Key]runtime.Object{"a": {key("x"): cmObj("x", "1", true)}},
			want:     want{values: map[string]string{"x": "1"}, problems: []string{"a"}},
		},
		{
			name:     "a mutable edit is taken",
			results:  []manifestResult{{path: "a", objects: []objectDoc{doc(0, cmObj("x", "2", false))}}},
			lastGood: map[string]map[localobjects.Key]runtime.Object{"a": {key("x"): cmObj("x", "1", false)}},
			want:     want{values: map[string]string{"x": "2"}},
		},
		{
			name:    "a later file cannot redefine an object",
			results: []manifestResult{{path: "a", objects: []objectDoc{doc(0, cmObj("x", "1", false))}}, {path: "b", objects: []objectDoc{doc(0, cmObj("x", "2", false))}}},
			want:    want{values: map[string]string{"x": "1"}, problems: []string{"b"}},
		},
		{
			name:     "an unreadable file keeps its objects on a watch relist",
			results:  []manifestResult{{path: "a", unreadable: true, err: errInvalidForTest}},
			lastGood: map[string]map[localobjects.Key]runtime.Object{"a": {key("x"): cmObj("x", "1", false)}},
			keep:     true,
			want:     want{values: map[string]string{"x": "1"}},
		},
		{
			name:     "an unreadable file loses its objects on a periodic relist",
			results:  []manifestResult{{path: "a", unreadable: true, err: errInvalidForTest}},
			lastGood: map[string]map[localobjects.Key]runtime.Object{"a": {key("x"): cmObj("x", "1", false)}},
			want:     want{values: map[string]string{}},
		},
		{
			name:    "a file whose pods failed still gives its objects",
			results: []manifestResult{{path: "a", err: errInvalidForTest, objects: []objectDoc{doc(1, cmObj("x", "1", false))}}},
			want:    want{values: map[string]string{"x": "1"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries, good, problems := assembleObjects(tc.results, tc.lastGood, tc.keep)
			got := map[string]string{}
			for _, e := range entries {
				got[e.Key.Name] = e.Object.(*v1.ConfigMap).Data["k"]
				if good[e.Path][e.Key] != e.Object {
					t.Errorf("%s is used but not remembered as %s's", e.Key, e.Path)
				}
			}
			if tc.want.values == nil {
				tc.want.values = map[string]string{}
			}
			if !reflect.DeepEqual(got, tc.want.values) {
				t.Errorf("objects = %v, want %v", got, tc.want.values)
			}
			var paths []string
			for p := range problems {
				paths = append(paths, p)
			}
			if len(paths) != len(tc.want.problems) || (len(paths) > 0 && !reflect.DeepEqual(paths, tc.want.problems)) {
				t.Errorf("problems in %v (%v), want %v", paths, problems, tc.want.problems)
			}
		})
	}
}

var errInvalidForTest = errorString("invalid for the test")

type errorString string

func (e errorString) Error() string { return string(e) }
