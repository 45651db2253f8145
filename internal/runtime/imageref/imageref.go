package imageref

import "strings"

// Repository returns the image's repository in the fully qualified form the
// runtime resolves it to, without tag or digest: "busybox:1.36" becomes
// "docker.io/library/busybox", "quay.io/a/b@sha256:..." becomes "quay.io/a/b".
// The first component names a registry when it holds "." or ":", is
// "localhost", or has upper-case letters; otherwise the image is on Docker Hub.
func Repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	domain, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost" && strings.ToLower(domain) == domain) {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain + "/" + rest
}
