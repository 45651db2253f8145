// Package app wires the kubelet together in dependency order and runs it:
// runtime connection, managers, pod sources, PLEG, the sync loop and the
// HTTP endpoints. It owns start-up and shutdown, nothing else.
package app
