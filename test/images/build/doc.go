// Command build writes a single-layer container image as a tarball that both
// `ctr images import` (OCI layout: oci-layout, index.json, blobs/) and
// `crane push` (docker-archive manifest.json) accept. Stdlib only, no network;
// output is reproducible: the same rootfs and flags give the same digests.
package main
