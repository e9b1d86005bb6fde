#!/usr/bin/env bash
# What `make run` does while there is no window app: show the machine, make sure a tiny
# generated model exists, and describe it.
# Usage: tools/demo.sh BIN    (BIN is the trochilus CLI, e.g. bin/trochilus)
set -euo pipefail
bin=${1:?usage: tools/demo.sh BIN}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x "$bin" ] || { echo "demo: $bin is not an executable (run make cli)" >&2; exit 1; }

model=testdata/gen/tiny-q8_0.gguf

echo "== trochilus cpu"
"$bin" cpu

echo
if [ -f "$model" ]; then
  echo "== $model is already there (delete it to write it again)"
else
  echo "== trochilus gen -o $model -preset tiny -type q8_0"
  mkdir -p "$(dirname "$model")"
  # The OLMoE tokenizer is a fixture beside the checkout; without it the model carries none.
  if ! "$bin" gen -o "$model" -preset tiny -type q8_0 2>/tmp/trochilus-demo.$$; then
    if grep -q 'tokenizer.json not found' /tmp/trochilus-demo.$$; then
      echo "(OLMoE tokenizer not found: writing the model without one)"
      "$bin" gen -o "$model" -preset tiny -type q8_0 -no-tokenizer
    else
      cat /tmp/trochilus-demo.$$ >&2
      rm -f /tmp/trochilus-demo.$$
      exit 1
    fi
  fi
  rm -f /tmp/trochilus-demo.$$
fi

echo
echo "== trochilus inspect $model"
"$bin" inspect "$model"
