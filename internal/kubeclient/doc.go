// Package kubeclient is the kubelet's typed API client: a narrow replacement
// for client-go's generated clientset (k8s.io/client-go/kubernetes).
//
// The generated clientset links every API group's types, the full
// kubernetes/scheme, apply configurations and discovery into the binary;
// the kubelet talks to seven groups. This package builds one rest.RESTClient
// per group over a shared http.Client and a Scheme holding only those groups
// (core/v1, coordination/v1, authentication/v1, authorization/v1,
// certificates/v1, storage/v1, node/v1), and exposes interfaces with exactly
// the methods the kubelet calls.
//
// Invariants:
//   - Requests behave as the generated clientset's do: same paths, query
//     parameter encoding, user agent default, one token-bucket rate limiter
//     shared by all groups of a client when QPS > 0 (QPS < 0 means none), and
//     protobuf as the default wire format unless the rest.Config names a
//     content type.
//   - The interfaces are method subsets of client-go's typed clients with the
//     same signatures, so a client-go clientset (the fake one in tests) can be
//     adapted without conversion (see kubeclienttest).
//   - Scheme holds only the groups above; decoding any other kind fails.
package kubeclient
