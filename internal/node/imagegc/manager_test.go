package imagegc

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/metrics"
)

type fakeCRI struct {
	images     []*runtimeapi.Image
	containers []*runtimeapi.Container
	removed    []string
}

func (f *fakeCRI) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: f.images}, nil
}

func (f *fakeCRI) RemoveImage(_ context.Context, in *runtimeapi.RemoveImageRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error) {
	f.removed = append(f.removed, in.Image.Image)
	var left []*runtimeapi.Image
	for _, i := range f.images {
		if i.Id != in.Image.Image {
			left = append(left, i)
		}
	}
	f.images = left
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (f *fakeCRI) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

func (f *fakeCRI) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *fakeCRI) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Info: map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`}}, nil
}

type recorded struct{ reasons []string }

func (r *recorded) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.reasons = append(r.reasons, reason)
}

func newFake() *fakeCRI {
	return &fakeCRI{
		images: []*runtimeapi.Image{
			{Id: "sha256:pause", RepoTags: []string{"registry.k8s.io/pause:3.10"}, Size: 1000},
			{Id: "sha256:busybox", RepoTags: []string{"docker.io/library/busybox:1.36"}, Size: 2000},
			{Id: "sha256:old", RepoTags: []string{"example/old:1"}, Size: 3000},
			{Id: "sha256:older", RepoTags: []string{"example/older:1"}, Size: 4000},
			{Id: "sha256:pinned", RepoTags: []string{"example/pinned:1"}, Size: 5000, Pinned: true},
		},
		containers: []*runtimeapi.Container{
			{Id: "c1", ImageRef: "sha256:busybox", State: runtimeapi.ContainerState_CONTAINER_EXITED},
		},
	}
}

func TestGarbageCollectFreesLeastRecentlyUsedFirst(t *testing.T) {
	cri := newFake()
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	avail := int64(100)
	rec := &recorded{}
	m, err := New(Config{Images: cri, Runtime: cri, Clock: clk, Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"},
		Policy:  Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute},
		FsStats: func(context.Context) (int64, int64, error) { return 100000, avail, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// "old" is used for a while, then its container goes; "older" never is.
	cri.containers = append(cri.containers, &runtimeapi.Container{Id: "c2", Image: &runtimeapi.ImageSpec{Image: "example/old:1"}})
	if err := m.GarbageCollect(ctx); err == nil {
		t.Fatal("nothing is old enough yet: want FreeDiskSpaceFailed")
	}
	if len(cri.removed) != 0 || !reflect.DeepEqual(rec.reasons, []string{FreeDiskSpaceFailed}) {
		t.Fatalf("removed %v, events %v", cri.removed, rec.reasons)
	}
	cri.containers = cri.containers[:1]
	clk.Step(3 * time.Minute)
	// 100% used; freeing down to 80% needs 19900 bytes: more than all
	// removable images, so both go, older first, and the pass still fails.
	err = m.GarbageCollect(ctx)
	if !reflect.DeepEqual(cri.removed, []string{"sha256:older", "sha256:old"}) {
		t.Fatalf("removed %v, want older then old (never used before last used)", cri.removed)
	}
	if err == nil {
		t.Fatal("want an error: not enough could be freed")
	}
	left := []string{}
	for _, i := range cri.images {
		left = append(left, i.Id)
	}
	sort.Strings(left)
	if !reflect.DeepEqual(left, []string{"sha256:busybox", "sha256:pause", "sha256:pinned"}) {
		t.Fatalf("left %v: in-use, sandbox and pinned images must stay", left)
	}
}

func TestGarbageCollectStopsAtLowThreshold(t *testing.T) {
	cri := newFake()
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	m, _ := New(Config{Images: cri, Runtime: cri, Clock: clk,
		Policy:  Policy{HighThresholdPercent: 90, LowThresholdPercent: 50},
		FsStats: func(context.Context) (int64, int64, error) { return 10000, 500, nil }}) // 95% used
	// To 50% is 4500 bytes: the first candidate (3000 or 4000, both never
	// used, equally old) is not enough, the second is.
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(cri.removed) != 2 {
		t.Fatalf("removed %v", cri.removed)
	}
}

func TestMaxAgeRemovesUnusedImagesWhateverTheUsage(t *testing.T) {
	cri := newFake()
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	met := metrics.New()
	m, _ := New(Config{Images: cri, Runtime: cri, Clock: clk, Metrics: met,
		Policy:  Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: time.Hour},
		FsStats: func(context.Context) (int64, int64, error) { return 10000, 9000, nil }})
	ctx := context.Background()
	if err := m.GarbageCollect(ctx); err != nil || len(cri.removed) != 0 {
		t.Fatalf("fresh start removed %v (err %v)", cri.removed, err)
	}
	clk.Step(61 * time.Minute)
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	sort.Strings(cri.removed)
	if !reflect.DeepEqual(cri.removed, []string{"sha256:old", "sha256:older"}) {
		t.Fatalf("removed %v", cri.removed)
	}
	want := `
# HELP kubelet_image_garbage_collected_total Total number of images garbage collected by the kubelet, whether through disk usage or image age.
# TYPE kubelet_image_garbage_collected_total counter
kubelet_image_garbage_collected_total{reason="age"} 2
`
	if err := testutil.CollectAndCompare(met.ImageGarbageCollected, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	cri := newFake()
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	m, _ := New(Config{Images: cri, Runtime: cri, Clock: clk, Policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}})
	freed, err := m.DeleteUnusedImages(context.Background())
	if err != nil || freed != 7000 {
		t.Fatalf("freed %d, %v; want 7000", freed, err)
	}
}

func TestNewValidatesPolicy(t *testing.T) {
	cri := newFake()
	clk := clocktesting.NewFakeClock(time.Now())
	for _, p := range []Policy{{HighThresholdPercent: 101}, {HighThresholdPercent: 50, LowThresholdPercent: 60}, {HighThresholdPercent: 50, LowThresholdPercent: -1}} {
		if _, err := New(Config{Images: cri, Runtime: cri, Clock: clk, Policy: p}); err == nil {
			t.Errorf("policy %+v accepted", p)
		}
	}
}
