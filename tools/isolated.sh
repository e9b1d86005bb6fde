#!/usr/bin/env bash
# Runs a command in a copy of the checkout placed alone in a fresh temporary folder (no sibling
# folders, no ignored files: only what git tracks or would add), so that a test reading a file
# that exists only beside or inside this checkout's ignored paths fails here. The installed
# dependencies (.deps, which tools/deps.sh made) are shared through TROCHILUS_DEPS.
# Usage: tools/isolated.sh COMMAND [ARGS...]   (run in the copy's root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trochilus-isolated.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
copy="$tmp/trochilus"
mkdir "$copy"
( cd "$root" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - ) | tar -xf - -C "$copy"
[ -z "$(ls -A "$tmp" | grep -vx trochilus)" ] || { echo "isolated: $tmp is not empty" >&2; exit 1; }
echo "isolated: running in $copy ($(find "$copy" -type f | wc -l) files, nothing beside it)"
cd "$copy"
TROCHILUS_DEPS=${TROCHILUS_DEPS:-$root/.deps} "$@"
