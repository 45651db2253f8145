package podspec

import (
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Grammar of an image reference, after the distribution project's
// reference package: [domain[:port]/]path[:tag][@digest].
var (
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domainHost      = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])`
	domainRe        = regexp.MustCompile(`^` + domainHost + `(?::[0-9]+)?$`)
	pathComponentRe = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	tagRe           = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRe        = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
	hexIdentifierRe = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// digestHexLen is the hex length of each digest algorithm a reference may name.
var digestHexLen = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

const maxImageNameLength = 255

// imageTag returns the tag an image reference resolves to the way the API
// server reads it: the explicit tag if there is one, "latest" when there is
// neither tag nor digest, and "" for a digest-only reference. ok is false when
// the reference does not parse; the tag is then "".
func imageTag(image string) (tag string, ok bool) {
	if image == "" || hexIdentifierRe.MatchString(image) {
		return "", false
	}
	domain, remainder := splitImageDomain(image)
	if domain != "" && !domainRe.MatchString(domain) {
		return "", false
	}

	nameAndTag, digest, hasDigest := strings.Cut(remainder, "@")
	if hasDigest && !validDigest(digest) {
		return "", false
	}
	path, tag, hasTag := strings.Cut(nameAndTag, ":")
	if hasTag && !tagRe.MatchString(tag) {
		return "", false
	}
	for _, component := range strings.Split(path, "/") {
		if !pathComponentRe.MatchString(component) {
			return "", false
		}
	}
	name := path
	if domain != "" {
		name = domain + "/" + path
	}
	if len(name) > maxImageNameLength {
		return "", false
	}
	if !hasTag && !hasDigest {
		return "latest", true
	}
	return tag, true
}

// splitImageDomain splits off the registry part of a reference: the first
// path component counts as a registry when it contains '.' or ':', is
// "localhost", or has upper-case letters (which a repository path may not).
func splitImageDomain(image string) (domain, remainder string) {
	first, rest, found := strings.Cut(image, "/")
	if !found {
		return "", image
	}
	if strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first {
		return first, rest
	}
	return "", image
}

func validDigest(digest string) bool {
	if !digestRe.MatchString(digest) {
		return false
	}
	algorithm, hex, _ := strings.Cut(digest, ":")
	want, known := digestHexLen[algorithm]
	return known && len(hex) == want && strings.ToLower(hex) == hex
}

// defaultPullPolicy is the imagePullPolicy the API server fills in for an
// image: Always when it resolves to the "latest" tag, IfNotPresent otherwise
// (including references that do not parse).
func defaultPullPolicy(image string) v1.PullPolicy {
	if tag, _ := imageTag(image); tag == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}
