#!/usr/bin/env bash
# What `make run` does while there is no display: show the machine, write a tiny generated model
# (random weights, OLMoE's real tokenizer and chat template, both built into the binary), have it
# answer a question through `trochilus chat`, and say how to get a real model and open the app.
# Usage: tools/demo.sh BIN    (BIN is the trochilus CLI, e.g. bin/trochilus)
set -euo pipefail
bin=${1:?usage: tools/demo.sh BIN}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x "$bin" ] || { echo "demo: $bin is not an executable (run make cli)" >&2; exit 1; }

model=testdata/gen/tiny-q8_0.gguf
question="What is a Mixture-of-Experts model?"

echo "== trochilus cpu"
"$bin" cpu

echo
if [ -f "$model" ]; then
  echo "== $model is already there (delete it to write it again)"
else
  echo "== trochilus gen -o $model -preset tiny -type q8_0"
  mkdir -p "$(dirname "$model")"
  "$bin" gen -o "$model" -preset tiny -type q8_0
fi

echo
echo "== echo \"$question\" | trochilus chat -m $model -n 48"
echo "(the model's weights are random, so its words are noise; the tokenizer, chat template,"
echo " MoE forward pass and streaming are the real ones a downloaded model goes through)"
echo
echo "$question" | "$bin" chat -m "$model" -n 48

cat <<MSG

== Next
A real model (OLMoE-1B-7B, 4.2 GB; Ctrl-C pauses, running it again resumes):
  $bin pull allenai/OLMoE-1B-7B-0125-Instruct-GGUF:Q4_K_M
  $bin ls
  $bin chat -m OLMoE-1B-7B-0125-Instruct-Q4_K_M.gguf
The desktop app, on a machine with a display: make run (or: make app && bin/trochilus-app).
A local server for OpenAI clients: $bin serve -m MODEL (then http://127.0.0.1:8080/v1).
MSG
