#!/usr/bin/env bash
# digests.sh: one SHA-256 of the logits per run of every tiny model in DIR under every SIMD tier,
# thread count and pass size, for comparing machines: the answer must not depend on any of them
# (nor on the machine), so every line of a model must show the same digest, here and elsewhere.
#
# usage: tools/digests.sh TROCHILUS_BINARY DIR     (DIR holds *.gguf, e.g. from `trochilus gen`)
# Session 5 ran it on this machine (Zen 5) and on a lent H200 host's Xeon: same digests.
#
# Sourced, it only defines what the checks that compare another platform's CLI with this one's
# share (tools/check-arm64.sh under qemu, tools/check-windows.sh under Wine): digest_models,
# logits_digest, digest_matrix and digest_compare.
set -euo pipefail

toks=$(seq -s, 100 37 1600) # 41 ids: a pass of 512 takes them at once, of 7 in six passes

# digest_models CLI DIR: writes into DIR, with CLI's gen, the tiny models the cross-platform
# checks compare: the OLMoE preset in five weight types (each its own kernels) and a Qwen3.
digest_models() {
  local cli=$1 dir=$2 m preset typ
  mkdir -p "$dir"
  for m in "tiny q8_0" "tiny q4_k_m" "tiny f16" "tiny q4_0" "tiny q6_k" "qwen3-tiny q8_0"; do
    read -r preset typ <<<"$m"
    "$cli" gen -o "$dir/$preset-$typ.gguf" -preset "$preset" -type "$typ" >/dev/null
  done
}

# logits_digest MODEL THREADS PASS COMMAND...: the first 16 hex digits of the SHA-256 of the
# logits that COMMAND (a trochilus CLI by an absolute path, after whatever runs it: qemu, wine)
# writes for toks.
# It runs in MODEL's folder and names the model ./NAME, so no platform's CLI has to read a
# path of another's. Its stderr is the caller's.
logits_digest() {
  local m=$1 th=$2 b=$3
  shift 3
  (cd "$(dirname "$m")" && "$@" logits -m "./$(basename "$m")" --tokens "$toks" -t "$th" -b "$b" -c 64) |
    sha256sum | cut -c1-16
}

# digest_matrix DIR TIERS COMMAND...: a line per run of every model in DIR under each tier of
# TIERS (a TROCHILUS_CPU_MAX value, or "best": no cap), threads 1 and 3, passes 1, 7 and 512:
# "MODEL TIER t=T b=B DIGEST KERNELS", KERNELS being the tier the CLI reports it ran. A failing
# run shows its stderr and fails.
digest_matrix() {
  local dir=$1 tiers=$2 m tier th b d k err
  shift 2
  err=$(mktemp)
  for m in "$dir"/*.gguf; do
    for tier in $tiers; do
      for th in 1 3; do
        for b in 1 7 512; do
          if [ "$tier" = best ]; then
            d=$(logits_digest "$m" $th $b "$@" 2>"$err") || { cat "$err" >&2; rm -f "$err"; return 1; }
          else
            d=$(TROCHILUS_CPU_MAX=$tier logits_digest "$m" $th $b "$@" 2>"$err") || { cat "$err" >&2; rm -f "$err"; return 1; }
          fi
          k=$(sed -n 's/.*, kernels \([^,]*\),.*/\1/p' "$err" | head -1)
          echo "$(basename "$m") $tier t=$th b=$b $d ${k:-?}"
        done
      done
    done
  done
  rm -f "$err"
}

# digest_compare NAME_A FILE_A NAME_B FILE_B: the two digest_matrix outputs of the same models,
# tiers, threads and passes, line by line, side by side; fails unless every line's digests are
# equal, and equal to the model's first (no setting may change the logits).
digest_compare() {
  paste -d ' ' "$2" "$4" | awk -v a="$1" -v b="$3" '
    $1 != $7 || $2 != $8 || $3 != $9 || $4 != $10 { print "lines do not match: " $0; bad = 1; next }
    !($1 in first) { first[$1] = $5 }
    { ok = $5 == $11 && $5 == first[$1]
      printf "%-22s %-10s %-4s %-6s %s %s (%s)  %s %s (%s)%s\n", $1, $2, $3, $4, a, $5, $6, b, $11, $12, ok ? "" : "  DIFFERS"
      if (!ok) bad = 1 }
    END { if (NR == 0) { print "no digests"; bad = 1 }; exit bad }'
}

[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

bin=$1 dir=$2
case $bin in /*) ;; */*) bin=$PWD/$bin ;; esac # logits_digest runs in the model's folder
for m in "$dir"/*.gguf; do
  for tier in scalar avx2 avx512 avx512vnni; do
    for th in 1 3 16; do
      for b in 1 7 512; do
        d=$(TROCHILUS_CPU_MAX=$tier logits_digest "$m" $th $b "$bin")
        echo "$(basename "$m") $tier t=$th b=$b $d"
      done
    done
  done
done
