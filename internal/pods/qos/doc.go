// Package qos owns the pod QoS class, the pod's aggregated resource requests
// and limits, and each container's OOM score adjustment.
// Invariants: functions are pure over the pod; a class recorded in
// status.qosClass is never recomputed; only cpu and memory decide the class.
package qos
