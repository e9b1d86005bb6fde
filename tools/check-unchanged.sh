#!/usr/bin/env bash
# Runs a command and fails if it changed the checkout: `make check-package` wraps
# packaging/package.sh in it, so a build that bumps FyneApp.toml, drops a .syso beside a main
# package or tidies go.mod is caught.
#
# A checkout that was clean must stay clean (git status, untracked files included): that is the
# CI case. In a checkout with work in progress, where someone may be editing while this runs,
# only the files a build could touch are compared (go.mod, go.sum, FyneApp.toml, *.syso
# anywhere outside the ignored build folders), and other changes are listed without failing.
#
# Usage: tools/check-unchanged.sh COMMAND [ARGS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

snapshot() { # the files a build could touch, with their hashes
  (cd "$root" && {
    sha256sum go.mod go.sum FyneApp.toml 2>/dev/null || true
    find . \( -path ./.git -o -path ./.deps -o -path ./dist \) -prune -o -name '*.syso' -print | sort
  })
}
status() { git -C "$root" status --porcelain=v1 --untracked-files=all; }

status_before=$(status)
snapshot_before=$(snapshot)
"$@"
status_after=$(status)
snapshot_after=$(snapshot)

if [ "$snapshot_before" != "$snapshot_after" ]; then
  echo "check-unchanged: $* changed build inputs in the checkout:"
  diff <(echo "$snapshot_before") <(echo "$snapshot_after") || true
  exit 1
fi
if [ "$status_before" = "$status_after" ]; then
  echo "check-unchanged: $* left the checkout as it was ($(grep -c . <<<"$status_before" || true) git status entries before and after)"
  exit 0
fi
if [ -z "$status_before" ]; then
  echo "check-unchanged: $* dirtied a clean checkout:"
  echo "$status_after"
  exit 1
fi
echo "check-unchanged: note: the checkout's work in progress changed meanwhile (not build inputs):"
diff <(echo "$status_before") <(echo "$status_after") | grep '^[<>]' || true
