#!/usr/bin/env bash
# The whole recipe of a trained tiny model, from the corpus to the committed GGUF:
#   tools/train/recipe.sh [DIR]      (default build/train; about 75 minutes on 2 cores)
#   TRAIN_ARCH=qwen3moe tools/train/recipe.sh [DIR]
#                                    (the Qwen3-MoE model; default build/train-qwen3; about
#                                    25 minutes on 2 idle cores)
# 1. the tokens of the corpus and the chat examples (go run ./tools/train data), with the
#    architecture's tokenizer and chat template;
# 2. training (train.py: Debian's PyTorch, 2 threads, seed 1, 1000 steps; the Qwen3-MoE
#    model 400);
# 3. the float32 export checked against the oracle (check.py: train.py's forward pass and
#    tools/oracle/olmoe_ref.py agree on held-out text);
# 4. the Q4_K_M export and its compact form (what is committed: testdata/trained), compared
#    with testdata/trained/SHA256SUMS (the tests make their Q8_0 from it).
# The same machine class gives the same bytes (the gate's `go test ./tools/train` checks the
# data step on every run); another CPU may round differently inside PyTorch's kernels, so a
# differing GGUF is reported with both loss curves' ends, not silently accepted.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
arch=${TRAIN_ARCH:-olmoe}
case "$arch" in
olmoe)
  dir=${1:-build/train}
  steps=${TRAIN_STEPS:-1000}
  name=olmoe log=testdata/trained/train-log.jsonl
  # SHA256SUMS's names of the model and of the data step's text.bin and chat.bin.
  sums=(olmoe-tiny-q4_k_m.gguf text.bin chat.bin)
  ;;
qwen3moe)
  dir=${1:-build/train-qwen3}
  steps=${TRAIN_STEPS:-400}
  name=qwen3 log=testdata/trained/qwen3-tiny-train-log.jsonl
  sums=(qwen3-tiny-q4_k_m.gguf qwen3-text.bin qwen3-chat.bin)
  ;;
*)
  echo "recipe: TRAIN_ARCH=$arch (olmoe or qwen3moe)" >&2
  exit 2
  ;;
esac
py=/usr/bin/python3
mkdir -p "$dir"
go run ./tools/train data -arch "$arch" -o "$dir"
rm -f "$dir/log.jsonl"
# glibc would hand each step's large tensors back to the kernel and fault them in again: a
# third of the step time. Keep freed memory in the process.
MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 \
  "$py" tools/train/train.py --arch "$arch" --data "$dir" --out "$dir/$name.safetensors" --steps "$steps" \
  --threads 2 --seed 1 --log "$dir/log.jsonl" >/dev/null
go run ./tools/train export -w "$dir/$name.safetensors" -type f32 -o "$dir/$name-tiny-f32.gguf"
"$py" tools/train/check.py --weights "$dir/$name.safetensors" --gguf "$dir/$name-tiny-f32.gguf" --data "$dir"
go run ./tools/train export -w "$dir/$name.safetensors" -type q4_k_m -o "$dir/$name-tiny-q4_k_m.gguf" \
  -compact "$dir/$name-tiny-q4_k_m.compact.gguf.gz"
rm -f "$dir/$name-tiny-f32.gguf"
echo "recipe: last step $(tail -1 "$dir/log.jsonl")"
echo "recipe: committed $(tail -1 "$log")"
( cd "$dir" && sha256sum "$name-tiny-q4_k_m.gguf" text.bin chat.bin ) |
  sed "s/  text.bin\$/  ${sums[1]}/; s/  chat.bin\$/  ${sums[2]}/" > "$dir/SHA256SUMS"
want=$(for n in "${sums[@]}"; do grep "  $n\$" testdata/trained/SHA256SUMS || true; done)
if diff -u <(echo "$want") "$dir/SHA256SUMS"; then
  echo "recipe: reproduced testdata/trained bit for bit"
else
  echo "recipe: the result differs from testdata/trained (above); $(grep -m1 'model name' /proc/cpuinfo)" >&2
  exit 1
fi
