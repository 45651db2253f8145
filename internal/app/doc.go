// Package app builds the kubelet from its options and runs it: it turns
// the configuration into each component's Config, constructs the
// components in dependency order (base → node → pods → loop, each stage
// reading only what earlier ones built), starts them and runs the sync loop.
//
// Invariants: app decides nothing about pods or the node; no component is
// changed after it was constructed, and no closure reads a variable
// assigned later.
package app
