package sources

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/seed-kubelet/kubelet/internal/pods/podutil"
)

func TestDiff(t *testing.T) {
	a := testPod("uid-a", "a")
	b := testPod("uid-b", "b")
	c := testPod("uid-c", "c")
	now := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	grace := int64(30)
	deleting := withPod(a, func(p *v1.Pod) { p.DeletionTimestamp = &now; p.DeletionGracePeriodSeconds = &grace })

	type want map[Operation][]types.UID
	tests := []struct {
		name       string
		prev, next map[types.UID]*v1.Pod
		want       want
	}{
		{name: "empty to empty changes nothing", want: want{}},
		{name: "identical snapshots change nothing", prev: byUID(a, b), next: byUID(a.DeepCopy(), b.DeepCopy()), want: want{}},
		{name: "new UID is an ADD", prev: byUID(a), next: byUID(a, b), want: want{ADD: {"uid-b"}}},
		{name: "missing UID is a REMOVE", prev: byUID(a, b), next: byUID(b), want: want{REMOVE: {"uid-a"}}},
		{name: "everything gone is all REMOVE", prev: byUID(a, b), next: nil, want: want{REMOVE: {"uid-a", "uid-b"}}},
		{
			name: "spec change is an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx" })),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			// pods/ephemeralcontainers changes the spec alone (the
			// generation does not move): still an UPDATE.
			name: "an added ephemeral container is an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}}
			})),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			// pods/resize changes a container's resources and the generation.
			name: "a resize is an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) {
				p.Generation = 2
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
			})),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			name: "label change is an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Labels = map[string]string{"k": "v"} })),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			name: "annotation change is an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Annotations = map[string]string{"k": "v"} })),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			name: "generation change is an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Generation = 2 })),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			name: "config.seen change alone is nothing",
			prev: byUID(withPod(a, func(p *v1.Pod) { p.Annotations = map[string]string{podutil.ConfigFirstSeenAnnotationKey: "t1"} })),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Annotations = map[string]string{podutil.ConfigFirstSeenAnnotationKey: "t2"} })),
			want: want{},
		},
		{
			name: "config.source and config.mirror changes alone are nothing",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) {
				p.Annotations = map[string]string{podutil.ConfigSourceAnnotationKey: "api", podutil.ConfigMirrorAnnotationKey: "x"}
			})),
			want: want{},
		},
		{
			name: "nil and empty labels are the same",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Labels = map[string]string{} })),
			want: want{},
		},
		{
			name: "resource version change alone is nothing",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.ResourceVersion = "42" })),
			want: want{},
		},
		{name: "new deletion timestamp is a DELETE", prev: byUID(a), next: byUID(deleting), want: want{DELETE: {"uid-a"}}},
		{
			name: "spec change while already deleting is a DELETE",
			prev: byUID(deleting),
			next: byUID(withPod(deleting, func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx" })),
			want: want{DELETE: {"uid-a"}},
		},
		{name: "still deleting with nothing changed is nothing", prev: byUID(deleting), next: byUID(deleting.DeepCopy()), want: want{}},
		{
			name: "status-only change is a RECONCILE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })),
			want: want{RECONCILE: {"uid-a"}},
		},
		{
			name: "spec and status change is only an UPDATE",
			prev: byUID(a),
			next: byUID(withPod(a, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning; p.Spec.RestartPolicy = v1.RestartPolicyNever })),
			want: want{UPDATE: {"uid-a"}},
		},
		{
			name: "mixed snapshot sorts each operation by name",
			prev: byUID(a, b, withPod(c, func(p *v1.Pod) { p.Name = "c0" })),
			next: byUID(
				withPod(b, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }),
				testPod("uid-z", "z"), testPod("uid-y", "y"),
			),
			want: want{REMOVE: {"uid-a", "uid-c"}, ADD: {"uid-y", "uid-z"}, RECONCILE: {"uid-b"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := diff(tc.prev, tc.next)
			gotMap := want{}
			for op, pods := range map[Operation][]*v1.Pod{
				ADD: got.adds, UPDATE: got.updates, DELETE: got.deletes, REMOVE: got.removes, RECONCILE: got.reconciles,
			} {
				if len(pods) > 0 {
					gotMap[op] = uidsOf(pods)
				}
			}
			if !reflect.DeepEqual(gotMap, tc.want) {
				t.Errorf("diff = %v, want %v", gotMap, tc.want)
			}
		})
	}
}

func TestDiffCarriesTheRightVersion(t *testing.T) {
	a := testPod("uid-a", "a")
	gone := testPod("uid-g", "g")
	newA := withPod(a, func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx" })
	got := diff(byUID(a, gone), byUID(newA))
	if len(got.updates) != 1 || got.updates[0] != newA {
		t.Errorf("UPDATE should carry the new pod, got %v", got.updates)
	}
	if len(got.removes) != 1 || got.removes[0] != gone {
		t.Errorf("REMOVE should carry the old pod, got %v", got.removes)
	}
}

func TestPodUpdatesOrderAndCopies(t *testing.T) {
	p := func(uid string) *v1.Pod { return testPod(uid, uid) }
	changes := podChanges{
		removes: []*v1.Pod{p("r")}, adds: []*v1.Pod{p("a1"), p("a2")}, updates: []*v1.Pod{p("u")},
		deletes: []*v1.Pod{p("d")}, reconciles: []*v1.Pod{p("c")},
	}
	got := changes.podUpdates("file")
	var ops []Operation
	for _, u := range got {
		ops = append(ops, u.Op)
		if u.Source != "file" {
			t.Errorf("update %v has source %q, want file", u.Op, u.Source)
		}
	}
	if want := []Operation{REMOVE, ADD, UPDATE, DELETE, RECONCILE}; !reflect.DeepEqual(ops, want) {
		t.Fatalf("ops = %v, want %v", ops, want)
	}
	if uids := uidsOf(got[1].Pods); !reflect.DeepEqual(uids, []types.UID{"a1", "a2"}) {
		t.Errorf("ADD pods = %v, want [a1 a2]", uids)
	}
	got[1].Pods[0].Name = "mutated"
	if changes.adds[0].Name != "a1" {
		t.Errorf("emitted pods must be copies; mutating one changed the mux's pod")
	}

	if ups := (podChanges{adds: []*v1.Pod{p("x")}}).podUpdates("api"); len(ups) != 1 || ups[0].Op != ADD {
		t.Errorf("only non-empty operations are emitted, got %v", ups)
	}
	if ups := (podChanges{}).podUpdates("api"); len(ups) != 0 {
		t.Errorf("no change must emit nothing, got %v", ups)
	}
}

func TestIndexSnapshot(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	stamp := now.Format(time.RFC3339Nano)
	a := testPod("uid-a", "a")
	prevA := withPod(a, func(p *v1.Pod) { p.Annotations = map[string]string{podutil.ConfigFirstSeenAnnotationKey: "earlier"} })

	tests := []struct {
		name         string
		snapshot     []*v1.Pod
		prev         map[types.UID]*v1.Pod
		wantUIDs     []types.UID
		wantRejected int
		wantSeen     map[types.UID]string
	}{
		{
			name:     "new pod is stamped with now and the source",
			snapshot: []*v1.Pod{a},
			wantUIDs: []types.UID{"uid-a"}, wantSeen: map[types.UID]string{"uid-a": stamp},
		},
		{
			name:     "known pod keeps its first-seen time",
			snapshot: []*v1.Pod{withPod(a, func(p *v1.Pod) { p.Annotations = map[string]string{podutil.ConfigFirstSeenAnnotationKey: "later"} })},
			prev:     byUID(prevA),
			wantUIDs: []types.UID{"uid-a"}, wantSeen: map[types.UID]string{"uid-a": "earlier"},
		},
		{
			name:     "new pod that brings its own first-seen time keeps it",
			snapshot: []*v1.Pod{prevA},
			wantUIDs: []types.UID{"uid-a"}, wantSeen: map[types.UID]string{"uid-a": "earlier"},
		},
		{
			name:     "duplicate name: the first wins",
			snapshot: []*v1.Pod{a, testPod("uid-other", "a")},
			wantUIDs: []types.UID{"uid-a"}, wantRejected: 1,
		},
		{
			name:     "duplicate UID: the first wins",
			snapshot: []*v1.Pod{a, testPod("uid-a", "other")},
			wantUIDs: []types.UID{"uid-a"}, wantRejected: 1,
		},
		{
			name:     "pod without UID is rejected",
			snapshot: []*v1.Pod{testPod("", "x"), nil},
			wantUIDs: []types.UID{}, wantRejected: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := make([]*v1.Pod, len(tc.snapshot))
			for i, p := range tc.snapshot {
				before[i] = p.DeepCopy()
			}
			got, rejected := indexSnapshot("file", tc.snapshot, tc.prev, now)
			if len(rejected) != tc.wantRejected {
				t.Errorf("rejected %d pods, want %d: %v", len(rejected), tc.wantRejected, rejected)
			}
			uids := []types.UID{}
			for uid, p := range got {
				uids = append(uids, uid)
				if p.Annotations[podutil.ConfigSourceAnnotationKey] != "file" {
					t.Errorf("pod %s source annotation = %q, want file", uid, p.Annotations[podutil.ConfigSourceAnnotationKey])
				}
				if want, ok := tc.wantSeen[uid]; ok && p.Annotations[podutil.ConfigFirstSeenAnnotationKey] != want {
					t.Errorf("pod %s seen = %q, want %q", uid, p.Annotations[podutil.ConfigFirstSeenAnnotationKey], want)
				}
			}
			if !reflect.DeepEqual(uids, tc.wantUIDs) {
				t.Errorf("kept %v, want %v", uids, tc.wantUIDs)
			}
			if !reflect.DeepEqual(before, tc.snapshot) {
				t.Errorf("indexSnapshot mutated its input")
			}
		})
	}
}
