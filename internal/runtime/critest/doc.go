// Package critest serves cri-api's fake runtime and image services
// (k8s.io/cri-api/pkg/apis/testing) through an in-process gRPC server, so
// unit tests drive code that holds runtimeapi.RuntimeServiceClient and
// ImageServiceClient through the real generated stubs, with the fake's
// state to assert on. It is imported by tests only.
//
// Why a bridge of ours: the cri-api fakes implement cri-api's internal
// interface, not the gRPC client our packages consume; k8s.io/cri-client's
// fake does the bridging but would add a module and a unix socket. On top
// of the fake, Server stamps times from an injected clock, keeps the log
// path and mounts a real runtime reports, and serves GetContainerEvents
// from a channel (or answers Unimplemented, as containerd 1.x does).
package critest
