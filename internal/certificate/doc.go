// Package certificate owns the kubelet's TLS credentials, as upstream's
// client-go/util/certificate and pkg/kubelet/certificate do: the client
// certificate it talks to the API server with (TLS bootstrap from
// --bootstrap-kubeconfig, rotation through certificates.k8s.io/v1 CSRs) and
// the serving certificate of its API (requested from the API, read from
// tlsCertFile/tlsPrivateKeyFile and reloaded when they change, or
// self-signed).
//
// Invariants: a key, certificate or kubeconfig is only ever replaced by a
// complete file (write, fsync, rename); the last good pair on disk is never
// removed; a failed request keeps the current certificate in use; every
// wait and deadline runs on the injected clock.
package certificate
