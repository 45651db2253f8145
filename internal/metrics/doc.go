// Package metrics owns the kubelet's own Prometheus metrics, named and
// labelled like upstream's kubelet_* families so existing dashboards and
// alerts keep working, and the registry /metrics serves them from.
//
// Invariants: metric names, labels and buckets match upstream's; every
// collector is registered once, at package init of the registry.
package metrics
