// Package runc pins runc (github.com/opencontainers/runc) for the private
// containerd 2.x of hack/private-containerd.sh: Debian's runc 1.1.5 lacks
// idmapped mounts, so containerd 2.x reports no user-namespace support
// with it (CRI RuntimeHandlerFeatures.user_namespaces needs the runtime's
// "mountExtensions.idmap"), and hostUsers: false pods cannot run.
package runc
