// Package auth guards the kubelet API on port 10250 as upstream does: it
// authenticates a request by client certificate, bearer token (TokenReview)
// or as anonymous, then authorizes it with AlwaysAllow or SubjectAccessReview,
// trying the fine-grained nodes/<subresource> before falling back to nodes/proxy.
package auth
