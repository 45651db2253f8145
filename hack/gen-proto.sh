#!/usr/bin/env bash
# Regenerates the Go code of the protocol buffers the kubelet defines itself
# (today only internal/runtime/pullprogress/contentv1: the read-only subset of
# containerd's content service). protoc from Debian (protobuf-compiler),
# protoc-gen-go and protoc-gen-go-grpc at the versions pinned in the
# test/tools module. The generated files are committed; run this after
# editing a .proto file.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

if ! command -v protoc >/dev/null; then
  log "packages: installing protobuf-compiler"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null
fi
plugins=$(mktemp -d)
trap 'rm -rf "$plugins"' EXIT
(cd "${REPO_ROOT}/test/tools" &&
  go build -o "$plugins/" google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc)

dir=${REPO_ROOT}/internal/runtime/pullprogress/contentv1
PATH="${plugins}:${PATH}" protoc --proto_path="$dir" \
  --go_out="$dir" --go_opt=paths=source_relative \
  --go-grpc_out="$dir" --go-grpc_opt=paths=source_relative \
  "${dir}/containerd_content.proto"
log "generated $(cd "$dir" && ls ./*.pb.go | tr '\n' ' ')"
