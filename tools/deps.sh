#!/usr/bin/env bash
# Installs what the gate and the app need, idempotently: Debian packages for the oracles and the
# window app, and the npm packages (real HF tokenizers, ggml's libraries, GGUF readers, the OpenAI
# and Ollama client libraries the server is tested with) and
# llama.cpp's vocabularies under .deps/.
# Usage: tools/deps.sh [test|run|package]   (run: only what `make run` needs, the window app's
# build; package: only what `make package` and its checker need)
set -euo pipefail
mode=${1:-test}
case $mode in test | run | package) ;; *) echo "deps: unknown mode $mode (test, run or package)" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)

# The window app (Fyne) needs cgo and GL/X headers; every mode builds it.
debs=(gcc pkg-config libgl1-mesa-dev xorg-dev)
if [ "$mode" = test ]; then
  # The oracles: PyTorch for the reference forward passes, Jinja2 for chat templates.
  debs+=(python3-torch python3-numpy python3-jinja2 libopenblas0-pthread)
  # make screenshot: a virtual X server and Mesa's software GL for the window app.
  debs+=(xvfb libgl1-mesa-dri)
  # make check-arm64: linux/arm64 test binaries and the CLI under user-mode emulation, with the
  # arm64 C library the CLI's dynamic loader wants (purego links libc).
  debs+=(qemu-user-static libc6-arm64-cross)
  # make check-windows: windows/amd64 test binaries and the CLI under Wine (8.0, 64-bit); its
  # stand-in bcryptprimitives.dll builds with the mingw-w64 compiler the package mode installs.
  debs+=(wine wine64)
  # Node.js may come from elsewhere (nodesource bundles npm and conflicts with Debian's npm).
  command -v node >/dev/null 2>&1 || debs+=(nodejs)
  command -v npm >/dev/null 2>&1 || debs+=(npm)
fi
if [ "$mode" = package ] || [ "$mode" = test ]; then
  # make package: the mingw-w64 cross compiler and windres for the Windows exes, the archivers;
  # tools/check-package.sh: file, binutils' strings, desktop-file-validate, mingw objdump.
  debs+=(gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 xz-utils zip unzip file binutils desktop-file-utils)
fi
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "deps: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# `make run` needs no oracle: the CLI carries the tokenizer its demo model uses.
[ "$mode" = test ] || exit 0

# npm packages, pinned with every package they pull in by tools/clients/package-lock.json
# (npm ci installs exactly what it lists, or fails). The stamp holds the lockfile's digest so
# that a change reinstalls. To change a version: edit tools/clients/package.json, run
# `npm install --package-lock-only --ignore-scripts` in tools/clients, commit both.
npmdir="$root/.deps/npm"
lock="$root/tools/clients/package-lock.json"
mkdir -p "$npmdir"
if [ "$(cat "$npmdir/.stamp" 2>/dev/null)" != "$(sha256sum < "$lock")" ]; then
  echo "deps: installing npm packages into .deps/npm"
  cp "$root/tools/clients/package.json" "$lock" "$npmdir/"
  ( cd "$npmdir" && npm ci --no-audit --no-fund --ignore-scripts --omit=optional >/dev/null )
  sha256sum < "$lock" > "$npmdir/.stamp"
fi

# llama.cpp's vocab-only GGUF files (19 MB, not committed): extracted from the llama.cpp source
# that the pinned npm package node-llama-cpp ships as a git bundle, each checked against
# testdata/vocab/SHA256SUMS (testdata/vocab/README.md).
vocabdir="$root/.deps/llama-vocab"
sums="$root/testdata/vocab/SHA256SUMS"
if [ "$(cat "$vocabdir/.stamp" 2>/dev/null)" != "$(sha256sum < "$sums")" ]; then
  echo "deps: extracting llama.cpp's vocabularies from node-llama-cpp@3.22.1 into .deps/llama-vocab"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  ( cd "$tmp" && npm pack --silent node-llama-cpp@3.22.1 >/dev/null &&
    tar xzf node-llama-cpp-3.22.1.tgz package/llama/gitRelease.bundle &&
    git clone -q --bare package/llama/gitRelease.bundle src.git )
  rm -rf "$vocabdir" && mkdir -p "$vocabdir"
  while read -r _ name; do
    git --git-dir "$tmp/src.git" show "HEAD:models/$name" > "$vocabdir/$name"
  done < "$sums"
  ( cd "$vocabdir" && sha256sum --quiet -c "$sums" ) || { echo "deps: llama.cpp vocabularies do not match $sums" >&2; exit 1; }
  sha256sum < "$sums" > "$vocabdir/.stamp"
fi
