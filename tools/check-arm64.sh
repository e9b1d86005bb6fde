#!/usr/bin/env bash
# check-arm64.sh: the same bits on ARM. Builds linux/arm64 test binaries of the packages whose
# arithmetic must not move (kernels, gguf/quant, tokenizer) and the arm64 CLI, runs them under
# qemu-aarch64-static (arm64 fuses every x*y+z it may into an FMA, so this is where a product
# rounded too late would show), and compares the logits of tiny models of several weight types,
# at threads 1 and 3 and pass sizes 1, 7 and 512, with the amd64 CLI's, digest for digest.
# The engine's own test binary takes over ten minutes under emulation and is left out; the
# digests cover its arithmetic end to end.
#
# usage: tools/check-arm64.sh   (from the repository root; tools/deps.sh test installs qemu)
set -euo pipefail
. "$(dirname "$0")/digests.sh" # digest_models, digest_matrix, digest_compare
# The x86 oracles (libggml through purego) cannot load into an arm64 process: those tests skip
# here by name; the amd64 run of the gate requires them.
unset TROCHILUS_REQUIRE_ORACLES
go=${GO:-go}
qemu="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
command -v qemu-aarch64-static >/dev/null || { echo "check-arm64: qemu-aarch64-static is missing (tools/deps.sh test)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

start=$SECONDS
for pkg in kernels gguf/quant tokenizer; do
  CGO_ENABLED=0 GOARCH=arm64 $go test -c -o "$tmp/$(basename $pkg).test" ./$pkg
  # Each test binary runs in its package's folder, as go test runs it.
  ( cd "$pkg" && $qemu "$tmp/$(basename $pkg).test" -test.count=1 >"$tmp/$(basename $pkg).log" 2>&1 ) ||
    { cat "$tmp/$(basename $pkg).log" >&2; echo "check-arm64: $pkg's tests fail on arm64" >&2; exit 1; }
  echo "check-arm64: $pkg tests pass on arm64 ($((SECONDS - start)) s so far)"
done

CGO_ENABLED=0 $go build -o "$tmp/tro-amd64" ./app/trochilus
CGO_ENABLED=0 GOARCH=arm64 $go build -o "$tmp/tro-arm64" ./app/trochilus
digest_models "$tmp/tro-amd64" "$tmp/models"
digest_matrix "$tmp/models" best "$tmp/tro-amd64" >"$tmp/amd64.txt"
digest_matrix "$tmp/models" best $qemu "$tmp/tro-arm64" >"$tmp/arm64.txt"
digest_compare amd64 "$tmp/amd64.txt" arm64 "$tmp/arm64.txt" | sed 's/^/check-arm64: /' ||
  { echo "check-arm64: arm64 logits differ from amd64's" >&2; exit 1; }
echo "check-arm64: every arm64 digest equals amd64's ($((SECONDS - start)) s in all)"
