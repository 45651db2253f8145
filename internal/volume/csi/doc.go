// Package csi is the node side of the Container Storage Interface: driver
// registration (the plugin watcher's CSIPlugin handler, the CSINode object
// and the Node's driver annotation and topology labels), NodeStageVolume to
// the volume's global mount, NodePublishVolume into the pod's volume
// directory, their teardown, and NodeGetVolumeStats.
// Invariants: the on-disk layout is upstream's (vol_data.json beside every
// globalmount and pod mount dir), so volumes survive a kubelet restart or a
// swap with the upstream kubelet; every operation on one volume (driver and
// handle) holds that volume's lock, so a volume is never unstaged while a pod
// publishes it; the kubelet never unmounts a driver's mount itself.
package csi
