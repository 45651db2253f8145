// Package reliability holds the reliability suite (build tag
// reliability): faults and churn against the real containerd and control
// plane, each test printing its figures (FIGURE lines, and JSON lines in
// $RELIABILITY_OUT/figures.jsonl) and failing when one misses its bound:
// kubelet and containerd kill -9, an apiserver outage, namespace deletion,
// pod churn leaks, aborted streams. hack/reliability.sh runs it, scaled down
// by default and at full size with --full, for our kubelet or
// (RELIABILITY_KUBELET=upstream) the upstream one; docs/reliability.md keeps
// the latest full figures of both.
//
// Every test runs its kubelet on a private containerd (never the shared
// one: a kubelet stops pods it does not know), named by
// $RELIABILITY_CONTAINERD and reached at $CONTAINER_RUNTIME_ENDPOINT, and
// joins a control plane of the suite's own (TestMain stops it), never the
// shared one.
package reliability
