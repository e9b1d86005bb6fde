#!/usr/bin/env bash
# Proves tools/check-fmt.sh catches what it is for: an unformatted tracked file, an unformatted
# file git would add, and passes a clean tree with a tracked file deleted but not yet staged.
set -euo pipefail
check=$(cd "$(dirname "$0")" && pwd)/check-fmt.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
git init -q .
printf 'package x\n\nfunc f() {}\n' > good.go
printf 'package x\n\nfunc g() {}\n' > gone.go
git add good.go gone.go
rm gone.go
"$check" 2>/dev/null || { echo "check-fmt-test: a clean tree with a deleted file failed" >&2; exit 1; }
printf 'package x\nfunc  h(){}\n' > new.go
if "$check" 2>/dev/null; then echo "check-fmt-test: an unformatted untracked file passed" >&2; exit 1; fi
git add new.go
if "$check" 2>/dev/null; then echo "check-fmt-test: an unformatted tracked file passed" >&2; exit 1; fi
echo "check-fmt-test: the format check catches tracked and untracked files"
