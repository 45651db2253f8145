// Package podsync owns what one sync of one pod does: read the runtime's
// view, publish the pod's status, act through the runtime manager, and
// publish again when something changed. It implements podworkers.Syncer.
//
// Invariants: the status published after a sync reflects the runtime after
// that sync's actions, so readers never wait for a relist to see a start.
package podsync
