// Package contentv1 is the generated Go client of the read-only subset of
// containerd's content service (containerd_content.proto: List, Read,
// ListStatuses) that pullprogress uses. Regenerate with hack/gen-proto.sh;
// never edit the .pb.go files.
package contentv1
