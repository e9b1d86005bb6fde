#!/usr/bin/env bash
# Part of the gate (make fmt-check): every Go file git tracks (and that is still there) or would
# add is gofmt-clean; gofmt's own errors fail too (LESSONS 28). Run in the repository to check.
set -euo pipefail
out=$(git ls-files -z -co --exclude-standard '*.go' |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  xargs -0 -r gofmt -l 2>&1) || true
if [ -n "$out" ]; then
  echo "gofmt would change (or failed): $out" >&2
  exit 1
fi
