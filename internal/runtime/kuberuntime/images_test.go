package kuberuntime

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/seed-kubelet/kubelet/internal/events"
)

// failingImages has no image and fails every pull.
type failingImages struct {
	runtimeapi.ImageServiceClient
	pulls int
}

func (f *failingImages) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest, ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{}, nil
}

func (f *failingImages) PullImage(context.Context, *runtimeapi.PullImageRequest, ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	f.pulls++
	return nil, errors.New("not found")
}

// A failed pull is retried once its back-off (10s, then 20s, ...) has
// passed since the failure, as upstream's IsInBackOffSinceUpdate; until then
// the puller answers ImagePullBackOff without pulling.
func TestImagePullBackOff(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	images := &failingImages{}
	p := NewImagePuller(ImageConfig{Images: images, Clock: clk, Recorder: events.LogRecorder{}})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}}
	c := &v1.Container{Name: "c", Image: "localhost:5000/missing:1", ImagePullPolicy: v1.PullIfNotPresent}
	ensure := func() error {
		_, err := p.EnsureImage(context.Background(), pod, c, nil, nil)
		return err
	}

	steps := []struct {
		wait      time.Duration
		wantErr   error
		wantPulls int
		wantRetry time.Duration
	}{
		{wait: 0, wantErr: ErrImagePull, wantPulls: 1, wantRetry: 10 * time.Second},
		{wait: 9 * time.Second, wantErr: ErrImagePullBack, wantPulls: 1, wantRetry: time.Second},
		{wait: time.Second, wantErr: ErrImagePull, wantPulls: 2, wantRetry: 20 * time.Second},
		{wait: 19 * time.Second, wantErr: ErrImagePullBack, wantPulls: 2, wantRetry: time.Second},
		{wait: time.Second, wantErr: ErrImagePull, wantPulls: 3, wantRetry: 40 * time.Second},
	}
	for i, s := range steps {
		clk.Step(s.wait)
		if err := ensure(); !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d: err = %v, want %v", i, err, s.wantErr)
		}
		if images.pulls != s.wantPulls {
			t.Fatalf("step %d: %d pulls, want %d", i, images.pulls, s.wantPulls)
		}
		if got := p.RetryAfter(pod, c.Image); got != s.wantRetry {
			t.Fatalf("step %d: RetryAfter = %v, want %v", i, got, s.wantRetry)
		}
	}
}
