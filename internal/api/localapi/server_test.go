package localapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/localobjects"
	"github.com/seed-kubelet/kubelet/internal/pods/podworkers"
)

func TestDiscovery(t *testing.T) {
	ts := newTestServer(t)
	var versions metav1.APIVersions
	ts.get("/api").decode(t, &versions)
	if !slices.Equal(versions.Versions, []string{"v1"}) || len(versions.ServerAddressByClientCIDRs) != 1 {
		t.Errorf("/api = %+v", versions)
	}
	var list metav1.APIResourceList
	r := ts.get("/api/v1", "Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q: a plain JSON answer makes clients fall back to legacy discovery", ct)
	}
	r.decode(t, &list)
	byName := map[string]metav1.APIResource{}
	for _, res := range list.APIResources {
		byName[res.Name] = res
	}
	pods := byName["pods"]
	if pods.Kind != "Pod" || !pods.Namespaced || !slices.Equal(pods.ShortNames, []string{"po"}) || !slices.Contains(pods.Verbs, "watch") || !slices.Contains(pods.Categories, "all") {
		t.Errorf("pods = %+v", pods)
	}
	for _, name := range []string{"pods/log", "pods/exec", "pods/attach", "pods/portforward", "configmaps", "secrets", "events", "nodes"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("%s is not served", name)
		}
	}
	if _, ok := byName["services"]; ok || len(byName) != 9 {
		t.Errorf("serves %d resources, want only what the kubelet honours", len(byName))
	}
	var groups metav1.APIGroupList
	ts.get("/apis").decode(t, &groups)
	if len(groups.Groups) != 0 {
		t.Errorf("/apis = %+v", groups)
	}
	if r := ts.get("/version"); !strings.Contains(r.body, `"gitVersion":"v1.36.3"`) {
		t.Errorf("/version = %s", r.body)
	}
	if r := ts.get("/apis/apps/v1/namespaces/default/deployments"); r.code != http.StatusNotFound || r.status(t).Reason != metav1.StatusReasonNotFound {
		t.Errorf("unserved group: %d %s", r.code, r.body)
	}
	if r := ts.get("/api/v1/namespaces/default/services"); r.code != http.StatusNotFound {
		t.Errorf("unserved resource: %d %s", r.code, r.body)
	}
	if r := ts.get("/openapi/v3"); !strings.Contains(r.body, `"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=`) {
		t.Errorf("/openapi/v3 = %s", r.body)
	}
	if r := ts.get("/openapi/v3/api/v1"); !strings.Contains(r.body, `"fieldValidation"`) {
		t.Errorf("/openapi/v3/api/v1 = %s", r.body)
	}
	if r := ts.get("/openapi/v2"); r.code != http.StatusOK || r.body != "" {
		t.Errorf("/openapi/v2 = %d %q, want an empty document", r.code, r.body)
	}
}

func runningStatus(ip string) v1.PodStatus {
	return v1.PodStatus{
		Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: ip}}, PodIP: ip,
		Conditions:        []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.PodInitialized, Status: v1.ConditionTrue}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "main", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
	}
}

func TestPodsListGetAndSelectors(t *testing.T) {
	ts := newTestServer(t)
	web := staticPod(t, "web", "/m/web.yaml")
	web.Labels = map[string]string{"app": "web"}
	db := staticPod(t, "db", "/m/db.yaml")
	ts.kubelet.set([]*v1.Pod{web, db}, map[types.UID]v1.PodStatus{web.UID: runningStatus("10.88.0.5")}, nil)

	var table metav1.Table
	ts.get("/api/v1/namespaces/default/pods?limit=500", "Accept", tableAccept).decode(t, &table)
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" || len(table.ColumnDefinitions) != 9 || len(table.Rows) != 2 {
		t.Fatalf("table = %+v", table)
	}
	row := fmt.Sprint(table.Rows[1].Cells)
	if row != "[web 1/1 Running 0 60s 10.88.0.5 node1 <none> <none>]" {
		t.Errorf("web row = %s", row)
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[1].Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Name != "web" || meta.UID != web.UID {
		t.Errorf("row object = %s (%v)", table.Rows[1].Object.Raw, err)
	}

	// By its name, or by the name the kubelet runs it under.
	for _, name := range []string{"web", "web-node1"} {
		var pod v1.Pod
		r := ts.get("/api/v1/namespaces/default/pods/" + name)
		r.decode(t, &pod)
		if r.code != http.StatusOK || pod.Kind != "Pod" || pod.APIVersion != "v1" || pod.Name != "web" || pod.Status.PodIP != "10.88.0.5" || pod.ResourceVersion == "" {
			t.Errorf("GET %s: %d %+v", name, r.code, pod)
		}
	}
	if r := ts.get("/api/v1/namespaces/other/pods/web"); r.code != http.StatusNotFound || r.status(t).Message != `pods "web" not found` {
		t.Errorf("other namespace: %d %s", r.code, r.body)
	}

	names := func(query string) []string {
		var list v1.PodList
		r := ts.get("/api/v1/pods?" + query)
		if r.code != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, r.code, r.body)
		}
		r.decode(t, &list)
		var out []string
		for _, p := range list.Items {
			out = append(out, p.Name)
		}
		return out
	}
	for query, want := range map[string][]string{
		"":                                       {"db", "web"},
		"labelSelector=app%3Dweb":                {"web"},
		"fieldSelector=status.phase%3DRunning":   {"web"},
		"fieldSelector=status.phase!%3DRunning":  {"db"},
		"fieldSelector=spec.nodeName%3Dnode1":    {"db", "web"},
		"fieldSelector=metadata.name%3Ddb":       {"db"},
		"fieldSelector=status.podIP%3D10.88.0.5": {"web"},
	} {
		if got := names(query); !slices.Equal(got, want) {
			t.Errorf("list %q = %v, want %v", query, got, want)
		}
	}
	if r := ts.get("/api/v1/pods?fieldSelector=spec.bogus%3Dx"); r.code != http.StatusBadRequest || r.status(t).Message != "field label not supported: spec.bogus" {
		t.Errorf("unknown field: %d %s", r.code, r.body)
	}
	if r := ts.get("/api/v1/pods", "Accept", "application/vnd.kubernetes.protobuf"); r.code != http.StatusNotAcceptable {
		t.Errorf("protobuf only: %d %s", r.code, r.body)
	}
}

func TestPodStoppingIsServedTerminatingUntilStopped(t *testing.T) {
	ts := newTestServer(t)
	web := staticPod(t, "web", "/m/web.yaml")
	ts.kubelet.set([]*v1.Pod{web}, map[types.UID]v1.PodStatus{web.UID: runningStatus("10.88.0.5")}, nil)
	ts.get("/api/v1/pods")

	ts.kubelet.set(nil, map[types.UID]v1.PodStatus{web.UID: runningStatus("10.88.0.5")},
		map[types.UID]podworkers.PodState{web.UID: {Pod: web, State: podworkers.Terminating, Removed: true}})
	var table metav1.Table
	ts.get("/api/v1/namespaces/default/pods", "Accept", tableAccept).decode(t, &table)
	if len(table.Rows) != 1 || table.Rows[0].Cells[2] != "Terminating" {
		t.Fatalf("stopping pod: %+v", table.Rows)
	}
	var pod v1.Pod
	ts.get("/api/v1/namespaces/default/pods/web").decode(t, &pod)
	first := pod.DeletionTimestamp
	ts.clock.Step(time.Second)
	ts.get("/api/v1/namespaces/default/pods/web").decode(t, &pod)
	if first == nil || !pod.DeletionTimestamp.Equal(first) || pod.DeletionGracePeriodSeconds == nil {
		t.Fatalf("deletionTimestamp %v then %v: it must be set once", first, pod.DeletionTimestamp)
	}

	ts.kubelet.set(nil, nil, map[types.UID]podworkers.PodState{web.UID: {Pod: web, State: podworkers.Terminated, Removed: true}})
	if r := ts.get("/api/v1/namespaces/default/pods/web"); r.code != http.StatusNotFound {
		t.Fatalf("stopped pod still served: %d", r.code)
	}
}

// watchStream reads watch events.
type watchStream struct {
	t      *testing.T
	events chan metav1.WatchEvent
}

func (ts *testServer) watch(path string, header ...string) *watchStream {
	ts.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ts.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.http.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		ts.t.Fatalf("watch %s: %d", path, resp.StatusCode)
	}
	w := &watchStream{t: ts.t, events: make(chan metav1.WatchEvent, 100)}
	go func() {
		defer resp.Body.Close()
		defer close(w.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev metav1.WatchEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				w.events <- ev
			}
		}
	}()
	return w
}

func (w *watchStream) next() metav1.WatchEvent {
	w.t.Helper()
	select {
	case ev, ok := <-w.events:
		if !ok {
			w.t.Fatal("watch ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		w.t.Fatal("no watch event")
		return metav1.WatchEvent{}
	}
}

func TestWatchPods(t *testing.T) {
	ts := newTestServer(t)
	web := staticPod(t, "web", "/m/web.yaml")
	ts.kubelet.set([]*v1.Pod{web}, map[types.UID]v1.PodStatus{web.UID: {Phase: v1.PodPending}}, nil)
	var list v1.PodList
	ts.get("/api/v1/namespaces/default/pods").decode(t, &list)

	// From the list's resourceVersion, as kubectl get -w does, in Tables.
	w := ts.watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion="+list.ResourceVersion, "Accept", tableAccept)
	ts.kubelet.set([]*v1.Pod{web}, map[types.UID]v1.PodStatus{web.UID: runningStatus("10.88.0.9")}, nil)
	ts.s.pods.refresh()
	ev := w.next()
	var table metav1.Table
	json.Unmarshal(ev.Object.Raw, &table)
	if ev.Type != "MODIFIED" || len(table.ColumnDefinitions) == 0 || len(table.Rows) != 1 || table.Rows[0].Cells[2] != "Running" {
		t.Fatalf("event = %s %s", ev.Type, ev.Object.Raw)
	}
	ts.kubelet.set(nil, nil, nil)
	ts.s.pods.refresh()
	ev = w.next()
	table = metav1.Table{}
	json.Unmarshal(ev.Object.Raw, &table)
	if ev.Type != "DELETED" || len(table.ColumnDefinitions) != 0 || len(table.Rows) != 1 {
		t.Fatalf("event = %s %s; columns come with the first event only", ev.Type, ev.Object.Raw)
	}

	// Without a resourceVersion: the current pods first, as objects.
	ts.kubelet.set([]*v1.Pod{web}, nil, nil)
	w2 := ts.watch("/api/v1/pods?watch=1&fieldSelector=metadata.name%3Dweb")
	ev = w2.next()
	var pod v1.Pod
	json.Unmarshal(ev.Object.Raw, &pod)
	if ev.Type != "ADDED" || pod.Kind != "Pod" || pod.Name != "web" {
		t.Fatalf("initial event = %s %s", ev.Type, ev.Object.Raw)
	}

	// A resourceVersion older than the history: 410 Expired.
	w3 := ts.watch("/api/v1/pods?watch=1&resourceVersion=1")
	ev = w3.next()
	var st metav1.Status
	json.Unmarshal(ev.Object.Raw, &st)
	if ev.Type != "ERROR" || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("too old: %s %s", ev.Type, ev.Object.Raw)
	}
}

const appPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"app","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},
"spec":{"containers":[{"name":"main","image":"busybox","command":["sleep","3600"]}]},"status":{"phase":"Running"}}`

func TestCreatePodWritesItsManifest(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(http.MethodPost, "/api/v1/namespaces/default/pods?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", "application/json", appPod)
	if r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var created v1.Pod
	r.decode(t, &created)
	if created.Name != "app" || created.UID == "" || created.Spec.NodeName != testNode || len(r.header.Values("Warning")) != 1 {
		t.Errorf("created = %+v, warnings %v (the fake kubelet never runs it)", created.ObjectMeta, r.header.Values("Warning"))
	}
	path := filepath.Join(ts.dir, "pod_default_app.yaml")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("manifest %s: %v %v", path, st, err)
	}
	manifest := ts.readManifest("pod_default_app.yaml")
	for _, want := range []string{"kind: Pod", "name: app", "namespace: default", "image: busybox", "last-applied-configuration"} {
		if !strings.Contains(manifest, want) {
			t.Errorf("manifest lacks %q:\n%s", want, manifest)
		}
	}
	if strings.Contains(manifest, "status") || strings.Contains(manifest, "uid") {
		t.Errorf("manifest holds server fields:\n%s", manifest)
	}

	// Once the kubelet runs it, creating it again is a conflict.
	ts.kubelet.set([]*v1.Pod{staticPod(t, "app", path)}, nil, nil)
	if r := ts.do(http.MethodPost, "/api/v1/namespaces/default/pods", "application/json", appPod); r.code != http.StatusConflict || r.status(t).Reason != metav1.StatusReasonAlreadyExists {
		t.Errorf("second create: %d %s", r.code, r.body)
	}
}

func TestCreateRefusesBadPods(t *testing.T) {
	ts := newTestServer(t)
	tests := []struct {
		name, query, body string
		code              int
		reason            metav1.StatusReason
		message           string
	}{
		{name: "invalid", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"containers":[{"name":"main","image":"","imagePullPolicy":"Sometimes"}]}}`,
			code: 422, reason: metav1.StatusReasonInvalid, message: `Pod "bad" is invalid: [spec.containers[0].image: Required value, spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"]`},
		{name: "unknown field, strict", query: "?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","imagePullPolice":"Always"}]}}`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagePullPolice"`},
		{name: "another namespace", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
			code: 400, reason: metav1.StatusReasonBadRequest, message: "the namespace of the provided object does not match the namespace sent on the request"},
		{name: "another kind", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "a service account", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"serviceAccountName":"sa","containers":[{"name":"c","image":"i"}]}}`,
			code: 422, reason: metav1.StatusReasonInvalid, message: `Pod "x" is invalid: spec: Forbidden: static pods may not reference serviceaccounts`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(http.MethodPost, "/api/v1/namespaces/default/pods"+tc.query, "application/json", tc.body)
			st := r.status(t)
			if r.code != tc.code || st.Reason != tc.reason || (tc.message != "" && st.Message != tc.message) {
				t.Errorf("got %d %s %q", r.code, st.Reason, st.Message)
			}
			if entries, _ := os.ReadDir(ts.dir); len(entries) != 0 {
				t.Errorf("a refused pod left %d file(s) in staticPodPath", len(entries))
			}
		})
	}
	// Warn (the default) takes the pod and reports the unknown field.
	r := ts.do(http.MethodPost, "/api/v1/namespaces/default/pods", "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i","bogus":1}]}}`)
	if r.code != http.StatusCreated || !strings.Contains(strings.Join(r.header.Values("Warning"), ";"), `unknown field \"spec.containers[0].bogus\"`) {
		t.Errorf("warn: %d %v", r.code, r.header.Values("Warning"))
	}
	if r := ts.do(http.MethodPatch, "/api/v1/namespaces/default/pods/x", "application/apply-patch+yaml", "{}"); r.code != http.StatusUnsupportedMediaType {
		t.Errorf("server-side apply: %d %s", r.code, r.body)
	}
}

const sharedManifest = `# kept as written
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {k: v}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - {name: main, image: busybox}
---
apiVersion: v1
kind: Pod
metadata: {name: other}
spec:
  containers: [{name: main, image: busybox}]
`

func TestPatchAndDeleteEditOneDocument(t *testing.T) {
	ts := newTestServer(t)
	path := ts.writeManifest("shared.yaml", sharedManifest)
	web, other := staticPod(t, "web", path), staticPod(t, "other", path)
	ts.kubelet.set([]*v1.Pod{web, other}, nil, nil)

	r := ts.do(http.MethodPatch, "/api/v1/namespaces/default/pods/web", "application/strategic-merge-patch+json",
		`{"metadata":{"name":"web","labels":{"tier":"front"}},"spec":{"containers":[{"name":"main","image":"nginx"}]}}`)
	if r.code != http.StatusOK {
		t.Fatalf("patch: %d %s", r.code, r.body)
	}
	got := ts.readManifest("shared.yaml")
	docs := strings.Split(got, "---\n")
	want := strings.Split(sharedManifest, "---\n")
	if len(docs) != 3 || docs[0] != want[0] || docs[2] != want[2] {
		t.Fatalf("the other documents changed:\n%s", got)
	}
	if !strings.Contains(docs[1], "image: nginx") || !strings.Contains(docs[1], "tier: front") || strings.Contains(docs[1], "busybox") {
		t.Errorf("patched document:\n%s", docs[1])
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode changed to %v", st.Mode().Perm())
	}

	// A patch cannot rename the pod.
	if r := ts.do(http.MethodPatch, "/api/v1/namespaces/default/pods/web", "application/merge-patch+json", `{"metadata":{"name":"new"}}`); r.code != http.StatusBadRequest {
		t.Errorf("rename: %d %s", r.code, r.body)
	}
	// A stale resourceVersion is a conflict.
	if r := ts.do(http.MethodPut, "/api/v1/namespaces/default/pods/other", "application/json",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"other","resourceVersion":"1"},"spec":{"containers":[{"name":"main","image":"busybox"}]}}`); r.code != http.StatusConflict {
		t.Errorf("stale update: %d %s", r.code, r.body)
	}

	// Delete removes the document; the last one's file goes.
	r = ts.do(http.MethodDelete, "/api/v1/namespaces/default/pods/other", "application/json", `{"gracePeriodSeconds":0}`)
	var deleted v1.Pod
	r.decode(t, &deleted)
	if r.code != http.StatusOK || deleted.DeletionTimestamp == nil || len(r.header.Values("Warning")) == 0 {
		t.Fatalf("delete: %d %s %v", r.code, r.body, r.header)
	}
	if got := ts.readManifest("shared.yaml"); strings.Contains(got, "other") || !strings.HasPrefix(got, want[0]) {
		t.Fatalf("after delete:\n%s", got)
	}
	ts.kubelet.set([]*v1.Pod{web}, nil, nil)
	if r := ts.do(http.MethodDelete, "/api/v1/namespaces/default/pods/web", "", ""); r.code != http.StatusOK {
		t.Fatalf("delete web: %d %s", r.code, r.body)
	}
	if got := ts.readManifest("shared.yaml"); !strings.HasPrefix(got, "# kept as written") || strings.Contains(got, "kind: Pod") {
		t.Fatalf("after deleting both pods:\n%s", got)
	}
}

func TestPodOfAPodListIsNotEdited(t *testing.T) {
	ts := newTestServer(t)
	path := ts.writeManifest("list.yaml", "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: main, image: busybox}]}\n")
	ts.kubelet.set([]*v1.Pod{staticPod(t, "a", path)}, nil, nil)
	if r := ts.do(http.MethodDelete, "/api/v1/namespaces/default/pods/a", "", ""); r.code != http.StatusForbidden || !strings.Contains(r.status(t).Message, "PodList") {
		t.Errorf("delete from a PodList: %d %s", r.code, r.body)
	}
}

func TestConfigMapsAndSecrets(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"v"},"immutable":true}`)
	if r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	path := filepath.Join(ts.dir, "configmap_default_cfg.yaml")
	if !strings.Contains(ts.readManifest("configmap_default_cfg.yaml"), "k: v") {
		t.Fatalf("manifest:\n%s", ts.readManifest("configmap_default_cfg.yaml"))
	}
	// What the file source reads from it.
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "v"}, Immutable: ptrTrue()}
	ts.store.Set("file", []localobjects.Entry{{Key: localobjects.Key{Kind: localobjects.KindConfigMap, Namespace: "default", Name: "cfg"}, Object: cm, Path: path}})

	var table metav1.Table
	ts.get("/api/v1/namespaces/default/configmaps", "Accept", tableAccept).decode(t, &table)
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells) != "[cfg 1 0s]" {
		t.Errorf("table = %+v", table.Rows)
	}
	r = ts.do(http.MethodPatch, "/api/v1/namespaces/default/configmaps/cfg", "application/merge-patch+json", `{"data":{"k":"changed"}}`)
	if st := r.status(t); r.code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, "data: Forbidden: field is immutable when `immutable` is set") {
		t.Errorf("immutable: %d %s", r.code, r.body)
	}
	if r := ts.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"kind":"ConfigMap","metadata":{"name":"bad"},"data":{"a/b":"x"}}`); r.code != http.StatusUnprocessableEntity {
		t.Errorf("invalid key: %d %s", r.code, r.body)
	}
	if r := ts.do(http.MethodDelete, "/api/v1/namespaces/default/configmaps/cfg", "", ""); r.code != http.StatusOK {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the manifest of the deleted config map is still there: %v", err)
	}

	r = ts.do(http.MethodPost, "/api/v1/namespaces/default/secrets", "application/json",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"reg"},"type":"kubernetes.io/dockerconfigjson","stringData":{"other":"x"}}`)
	if st := r.status(t); r.code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, "data[.dockerconfigjson]: Required value") {
		t.Errorf("secret without its type's key: %d %s", r.code, r.body)
	}
	r = ts.do(http.MethodPost, "/api/v1/namespaces/default/secrets", "application/json",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pw"},"stringData":{"password":"s3cret"}}`)
	if r.code != http.StatusCreated || !strings.Contains(ts.readManifest("secret_default_pw.yaml"), "password: czNjcmV0") {
		t.Errorf("secret: %d %s\n%s", r.code, r.body, ts.readManifest("secret_default_pw.yaml"))
	}
}

func ptrTrue() *bool { b := true; return &b }

func TestSubresourcesReachTheKubeletHandlers(t *testing.T) {
	ts := newTestServer(t)
	web := staticPod(t, "web", "/m/web.yaml")
	web.Spec.Containers = append(web.Spec.Containers, v1.Container{Name: "side", Image: "busybox"})
	ts.kubelet.set([]*v1.Pod{web}, nil, nil)
	var seen string
	ts.logs = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.URL.RequestURI()
		if r.URL.Query().Get("previous") == "true" {
			http.Error(w, `previous terminated container "main" in pod "web-node1" not found`, http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, "log line\n")
	})
	r := ts.get("/api/v1/namespaces/default/pods/web/log?container=main&follow=true&tailLines=5")
	if r.code != http.StatusOK || r.body != "log line\n" || seen != "/containerLogs/default/web-node1/main?follow=true&tailLines=5" {
		t.Errorf("log: %d %q via %s", r.code, r.body, seen)
	}
	r = ts.get("/api/v1/namespaces/default/pods/web/log?container=main&previous=true")
	if st := r.status(t); r.code != http.StatusBadRequest || st.Message != `previous terminated container "main" in pod "web-node1" not found` {
		t.Errorf("log error: %d %s", r.code, r.body)
	}
	if r := ts.get("/api/v1/namespaces/default/pods/web/log"); r.code != http.StatusBadRequest ||
		r.status(t).Message != "a container name must be specified for pod web, choose one of: [main side]" {
		t.Errorf("no container: %d %s", r.code, r.body)
	}
	if r := ts.get("/api/v1/namespaces/default/pods/web/log?container=nope"); r.code != http.StatusBadRequest {
		t.Errorf("unknown container: %d %s", r.code, r.body)
	}

	ts.streams = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.URL.RequestURI()
		w.WriteHeader(http.StatusOK)
	})
	r = ts.do(http.MethodPost, "/api/v1/namespaces/default/pods/web/exec?command=sh&command=-c&command=id&container=side&stdin=true&stdout=true&tty=true", "", "")
	if r.code != http.StatusOK || seen != "/exec/default/web-node1/side?command=sh&command=-c&command=id&input=1&output=1&tty=1" {
		t.Errorf("exec: %d via %s", r.code, seen)
	}
	r = ts.do(http.MethodPost, "/api/v1/namespaces/default/pods/web/portforward?ports=8080", "", "")
	if r.code != http.StatusOK || seen != "/portForward/default/web-node1?port=8080" {
		t.Errorf("port-forward: %d via %s", r.code, seen)
	}
	// WebSocket is refused (kubectl falls back to SPDY on anything but 101).
	r = ts.get("/api/v1/namespaces/default/pods/web/exec?command=id&container=main&stdout=true", "Upgrade", "websocket", "Connection", "Upgrade")
	if r.code == http.StatusSwitchingProtocols || r.status(t).Reason != metav1.StatusReasonBadRequest {
		t.Errorf("websocket: %d %s", r.code, r.body)
	}
	if r := ts.do(http.MethodPut, "/api/v1/namespaces/default/pods/web/exec", "", ""); r.code != http.StatusMethodNotAllowed {
		t.Errorf("PUT exec: %d", r.code)
	}
}

func TestEventsAndNode(t *testing.T) {
	ts := newTestServer(t)
	when := metav1.NewTime(ts.clock.Now().Add(-time.Minute))
	ts.events.events = []v1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-node1.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web-node1", Namespace: "default", UID: "u"},
		Reason:         "Started", Message: "Started container main", Type: v1.EventTypeNormal, Count: 2,
		FirstTimestamp: when, LastTimestamp: when, Source: v1.EventSource{Component: "kubelet", Host: testNode},
	}}
	var table metav1.Table
	ts.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb", "Accept", tableAccept).decode(t, &table)
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells) != "[60s Normal Started pod/web  kubelet, node1 Started container main 60s 2 web-node1.1]" {
		t.Errorf("events = %+v", table.Rows)
	}
	var node v1.Node
	ts.get("/api/v1/nodes/"+testNode).decode(t, &node)
	if node.Kind != "Node" || node.Name != testNode {
		t.Errorf("node = %+v", node)
	}
	if r := ts.get("/api/v1/nodes/other"); r.code != http.StatusNotFound {
		t.Errorf("other node: %d", r.code)
	}
	if r := ts.get("/api/v1/nodes?watch=true"); r.code != http.StatusMethodNotAllowed {
		t.Errorf("node watch: %d", r.code)
	}
	if r := ts.do(http.MethodDelete, "/api/v1/nodes/"+testNode, "", ""); r.code != http.StatusMethodNotAllowed || r.status(t).Reason != metav1.StatusReasonMethodNotAllowed {
		t.Errorf("node delete: %d %s", r.code, r.body)
	}
}
