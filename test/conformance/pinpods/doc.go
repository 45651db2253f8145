// Command pinpods is a mutating admission webhook that keeps the pods of an
// upstream e2e run (hack/conformance.sh) on one node of the shared test
// cluster: other engineers' test nodes join and leave it at any time, and the
// scheduler would otherwise spread conformance pods onto them.
//
// Each e2e run authenticates as its own user (hack/conformance.sh
// impersonates one per kubelet), and -route USER=NODE says where that user's
// pods go, so runs against two kubelets can share the cluster at once.
//
// Invariants: it only ever answers "allowed"; a routed pod that names no
// node gets nodeSelector kubernetes.io/hostname=NODE (merged into any it
// has), one that names another node is moved to NODE; pods of other users
// are left alone; every change and every unrouted pod is logged. Which
// namespaces it applies to is the MutatingWebhookConfiguration's business
// (hack/conformance.sh selects the e2e framework's namespaces).
package main
