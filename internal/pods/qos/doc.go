// Package qos owns the pod QoS class and each container's OOM score
// adjustment. A pod's aggregated requests and limits are
// k8s.io/component-helpers/resource's (upstream's own math), called with
// the options upstream uses at each call site.
// Invariants: functions are pure over the pod; a class recorded in
// status.qosClass is never recomputed; only cpu and memory decide the class.
package qos
