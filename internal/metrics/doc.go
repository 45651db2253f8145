// Package metrics owns the kubelet's own Prometheus collectors, named,
// labelled and bucketed like upstream's (kubelet_* on /metrics, prober_* on
// /metrics/probes) so existing dashboards and alerts keep working.
//
// Invariants: no package-level collectors: one Metrics set is built at
// start-up and handed to each component through its Config, so tests get
// their own and a registry serves exactly the set it was given.
package metrics
