// Package options owns the kubelet's command line and its KubeletConfiguration
// file: flag registration, strict file decoding, v1beta1 defaulting, validation
// and the warnings for accepted-but-unsupported flags and fields.
// Invariant: precedence is defaults < config file < drop-ins < flags set on the
// command line; nothing here starts goroutines or touches the node.
package options
