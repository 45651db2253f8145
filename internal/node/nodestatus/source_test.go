package nodestatus

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type fakeCRI struct {
	status    *runtimeapi.StatusResponse
	statusErr error
	images    []*runtimeapi.Image
	imagesErr error
}

func (f *fakeCRI) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return f.status, f.statusErr
}

func (f *fakeCRI) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: f.images}, f.imagesErr
}

type checkFunc func() error

func (f checkFunc) HealthCheck() error { return f() }

type conditions []v1.NodeConditionType

func (c conditions) Conditions() []v1.NodeConditionType { return c }

func readyStatus() *runtimeapi.StatusResponse {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}
}

func TestSourceInputs(t *testing.T) {
	cri := &fakeCRI{status: readyStatus(), images: []*runtimeapi.Image{
		{Id: "a", RepoTags: []string{"b:1"}, RepoDigests: []string{"a@sha256:1"}, Size: 10},
		{Id: "untagged", Size: 5},
	}}
	static := testInputs()
	src := NewSource(SourceConfig{Static: static, Runtime: cri, Images: cri,
		PLEG:     checkFunc(func() error { return errors.New("pleg stalled") }),
		Pressure: conditions{v1.NodeMemoryPressure, v1.NodePIDPressure}})
	in, err := src.Inputs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if in.RuntimeErr != nil || in.NetworkErr != nil {
		t.Errorf("runtime %v, network %v: want healthy", in.RuntimeErr, in.NetworkErr)
	}
	if in.PLEGErr == nil || !in.MemoryPressure || in.DiskPressure || !in.PIDPressure {
		t.Errorf("pleg %v, pressure mem=%v disk=%v pid=%v", in.PLEGErr, in.MemoryPressure, in.DiskPressure, in.PIDPressure)
	}
	want := []v1.ContainerImage{{Names: []string{"a@sha256:1", "b:1"}, SizeBytes: 10}}
	if !reflect.DeepEqual(in.Images, want) {
		t.Errorf("images = %v, want %v", in.Images, want)
	}
	if in.NodeName != static.NodeName || !reflect.DeepEqual(in.Machine, static.Machine) {
		t.Error("static inputs not carried over")
	}

	// A runtime that does not answer makes the node NotReady; images that
	// cannot be listed are left out.
	cri.statusErr, cri.imagesErr = errors.New("connection refused"), errors.New("connection refused")
	in, err = NewSource(SourceConfig{Static: static, Runtime: cri, Images: cri}).Inputs(context.Background())
	if err != nil || in.RuntimeErr == nil || in.Images != nil || in.PLEGErr != nil {
		t.Errorf("runtime down: err %v, runtimeErr %v, images %v, pleg %v", err, in.RuntimeErr, in.Images, in.PLEGErr)
	}
	node := LocalNode(in, time.Unix(0, 0))
	if IsReady(node.Status) {
		t.Error("local node Ready although the runtime is down")
	}
}
