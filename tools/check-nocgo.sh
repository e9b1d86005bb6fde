#!/usr/bin/env bash
# No cgo outside ui/ (and the window app that links it): the CLI and the engine build static.
set -euo pipefail
bad=$(git grep -l '^import "C"' -- '*.go' ':!ui/**' ':!app/trochilus-app/**' || true)
if [ -n "$bad" ]; then echo "cgo outside ui/: $bad"; exit 1; fi
