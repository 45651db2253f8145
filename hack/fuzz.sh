#!/usr/bin/env bash
# Runs every Go native fuzz target of the kubelet (func FuzzXxx in
# internal/..., seed corpora in each package's testdata/fuzz/FuzzXxx) for
# the given time each (default 60s): manifest decoding, defaulting and
# validation (internal/sources, internal/pods/podspec), KubeletConfiguration
# decoding (internal/app/options) and the kubelet API's request and query
# parsing (internal/api/logs, internal/api/server, internal/api/streaming).
# Any crash fails the run; Go saves the input under the package's
# testdata/fuzz/FuzzXxx/, where it becomes a regression test of
# `go test ./...` once committed with the fix.
#
# Usage: hack/fuzz.sh [FUZZTIME] [TARGET-REGEX]   e.g. hack/fuzz.sh 10s, hack/fuzz.sh 5m FuzzDecodeConfig
# hack/test.sh runs it for 10s a target; run it for longer on its own.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

FUZZTIME=${1:-60s}
MATCH=${2:-.}

# "package target" pairs, from the sources.
mapfile -t targets < <(grep -rlE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' --include='*_test.go' internal |
  while read -r file; do
    sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\).*/\1/p' "$file" | while read -r fn; do
      echo "./$(dirname "$file") ${fn}"
    done
  done | sort -u)
((${#targets[@]})) || die "no fuzz targets found"

failed=()
for entry in "${targets[@]}"; do
  read -r pkg fn <<<"$entry"
  [[ $fn =~ $MATCH ]] || continue
  t0=$(now_ms)
  ok=no
  for attempt in 1 2; do
    if go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "$pkg" >"/tmp/fuzz-${fn}.log" 2>&1; then
      ok=yes
      break
    fi
    # Go's fuzzing engine sometimes ends a run with "context deadline
    # exceeded" and no failing input (a worker busy when -fuzztime ran out,
    # on a loaded machine): no crash was found, so try once more.
    if grep -q 'Failing input written' "/tmp/fuzz-${fn}.log" || ! grep -q 'context deadline exceeded' "/tmp/fuzz-${fn}.log"; then
      break
    fi
    log "${pkg} ${fn}: the fuzzing engine ran out of time without a failing input; again"
  done
  if [[ $ok == yes ]]; then
    log "${pkg} ${fn}: ok ($(grep -oE 'execs: [0-9]+' "/tmp/fuzz-${fn}.log" | tail -n 1 | cut -d' ' -f2) execs, $(($(now_ms) - t0))ms)"
  else
    failed+=("${pkg} ${fn}")
    echo "=== ${pkg} ${fn} FAILED:" >&2
    tail -n 40 "/tmp/fuzz-${fn}.log" >&2
  fi
done
if ((${#failed[@]})); then
  die "fuzzing found crashes in: ${failed[*]} (inputs saved under each package's testdata/fuzz/)"
fi
log "every fuzz target ran ${FUZZTIME} without a crash"
