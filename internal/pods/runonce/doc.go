// Package runonce owns the kubelet's --runonce mode, as upstream's: read
// the pod sources (at most a few seconds), sync each pod until its
// containers run or have exited, print each pod's outcome and exit.
//
// Invariants: every wait is on the injected clock; a failure retrying
// cannot cure (a bad config, an image never pulled) ends the pod's tries
// at once; Done decides from the runtime's view alone.
package runonce
