#!/usr/bin/env bash
# digests.sh: one SHA-256 of the logits per run of every tiny model in DIR under every SIMD tier,
# thread count and pass size, for comparing machines: the answer must not depend on any of them
# (nor on the machine), so every line of a model must show the same digest, here and elsewhere.
#
# usage: tools/digests.sh TROCHILUS_BINARY DIR     (DIR holds *.gguf, e.g. from `trochilus gen`)
# Session 5 ran it on this machine (Zen 5) and on a lent H200 host's Xeon: same digests.
set -euo pipefail
bin=$1 dir=$2
toks=$(seq -s, 100 37 1600) # 40 ids: a pass of 512 takes them at once, of 7 in six passes
for m in "$dir"/*.gguf; do
  for tier in scalar avx2 avx512 avx512vnni; do
    for th in 1 3 16; do
      for b in 1 7 512; do
        d=$(TROCHILUS_CPU_MAX=$tier "$bin" logits -m "$m" --tokens "$toks" -t $th -b $b -c 64 | sha256sum | cut -c1-16)
        echo "$(basename "$m") $tier t=$th b=$b $d"
      done
    done
  done
done
