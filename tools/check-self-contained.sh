#!/usr/bin/env bash
# Part of the gate: the repository needs nothing beside its checkout. Fails when a tracked file
# names the reference folder that once sat beside it, or the variable that pointed there. (The
# patterns are written so that this file does not match itself.)
set -euo pipefail
cd "$(dirname "$0")/.."
if hits=$(git grep -n -I -e '\.\.[/\\]shared' -e 'TROCHILUS_SHAR[E]D' -- . ':!testdata/corpus'); then
  echo "check-self-contained: tracked files refer to a folder outside the repository:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "check-self-contained: no tracked file refers outside the repository"
