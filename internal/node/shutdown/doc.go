// Package shutdown owns graceful node shutdown (upstream's nodeshutdown):
// a systemd-logind delay inhibitor lock held over D-Bus while the node is
// up, and on PrepareForShutdown(true) the active pods stopped group by
// group, lowest priority first, each group within its period
// (shutdownGracePeriod/-CriticalPods or shutdownGracePeriodByPodPriority),
// before the lock is released and logind goes on.
// Invariants: grouping and statuses are pure (groups.go); while shutting
// down no pod is admitted and the Node is NotReady ("node is shutting
// down"); a cancelled shutdown takes the lock again.
package shutdown
