// Package containergc owns the garbage collection of dead containers and
// sandboxes and of their logs, as upstream's container GC: every minute
// (and on the eviction manager's demand) it removes the dead containers and
// sandboxes of deleted pods, and of live pods the dead instances beyond
// MaxPerPodContainer per container and MaxContainers in all, oldest first.
// PodStateOf tells it which pods are gone, from the pod manager, the pod
// workers and the status manager.
//
// Invariants: Decide is pure; running containers and ready sandboxes, and
// containers younger than MinAge, are never removed; a container's log
// files and /var/log/containers link go with it; the newest sandbox of a
// live pod is kept so its status stays readable.
package containergc
