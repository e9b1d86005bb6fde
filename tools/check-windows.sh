#!/usr/bin/env bash
# check-windows.sh: the same program on Windows. Cross-compiles windows/amd64 test binaries of
# the packages that read files, map memory, time and compute (engine, kernels, gguf, gguf/quant,
# tokenizer, experts, engine/assistant), runs each under Wine in its package's folder (Wine maps
# / as Z:, so the fixtures are where go test would find them), and compares the logits of the
# tiny models that the Windows CLI computes under Wine with the Linux CLI's, digest for digest,
# at every SIMD tier this CPU runs, threads 1 and 3 and pass sizes 1, 7 and 512. Debian's Wine
# is 8.0, which lacks two things of Windows 10 that Go 1.26 needs; neither is a difference of
# Windows itself, so each is made up for here alone, never in what ships:
#   - bcryptprimitives.dll, whose ProcessPrng Go's runtime calls at start-up: a stand-in of ours
#     (tools/winshim/, built with mingw-w64) goes into the prefix's system32;
#   - FileDispositionInformationEx, which os.RemoveAll's Deleteat asks for first: Go falls back
#     to the older call on the answers of Windows before 10, but Wine answers
#     STATUS_NOT_IMPLEMENTED, which Go takes for a failure (so every t.TempDir holding a file
#     fails its clean-up). The test binaries are built with an -overlay of Go's
#     internal/syscall/windows/at_windows.go that falls back on that answer too. The CLI of the
#     digests is built as shipped.
# The test binaries are cached in build/windows by a hash of everything they are built from; the
# Wine prefix lives in build/windows/prefix.
#
# usage: tools/check-windows.sh   (from the repository root; tools/deps.sh test installs Wine)
set -euo pipefail
. "$(dirname "$0")/digests.sh" # digest_models, digest_matrix, digest_compare
# The oracles are Linux programs (node, Debian's python3 with torch, libggml .so files) that a
# Windows process cannot start or load: those tests skip themselves here, each listed below
# with its reason; the Linux runs of the gate require them.
unset TROCHILUS_REQUIRE_ORACLES
go=${GO:-go}
root=$PWD
for c in wine wineserver x86_64-w64-mingw32-gcc; do
  command -v $c >/dev/null || { echo "check-windows: $c is missing (tools/deps.sh test)" >&2; exit 1; }
done
pkgs=(engine kernels gguf gguf/quant tokenizer experts engine/assistant)
# Tests Wine cannot run, a line each: package, test, why. Everything else must pass.
skips="kernels TestAsmUpToDate it builds and runs the asm generator with the go command, and Wine has no Windows Go (the Linux runs check the generated files)"

out=$root/build/windows
mkdir -p "$out"
tmp=$(mktemp -d)
export WINEPREFIX=$out/prefix WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY # no window, no dialog
trap 'wineserver -k 2>/dev/null || true; rm -rf "$tmp"' EXIT
total=$SECONDS
echo "check-windows: $(wine --version), $($go version | cut -d' ' -f3)"

# The prefix, quietly (no Mono, no Gecko), once; the stand-in DLL into its system32 each run.
start=$SECONDS
[ -f "$WINEPREFIX/system.reg" ] || { wineboot --init >/dev/null 2>&1 && wineserver -w; }
mkdir -p "$out/shim"
x86_64-w64-mingw32-gcc -shared -O2 -s -nostdlib -Wl,-e,DllMain -Wl,--no-insert-timestamp \
  -o "$out/shim/bcryptprimitives.dll" tools/winshim/bcryptprimitives.c tools/winshim/bcryptprimitives.def -ladvapi32
cp "$out/shim/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
wineserver -p # one server for every run below (the trap stops it)
echo "check-windows: Wine prefix and bcryptprimitives.dll ready ($((SECONDS - start)) s)"

# The overlay: Go's at_windows.go falling back on STATUS_NOT_IMPLEMENTED (0xC0000002) as well.
start=$SECONDS
atw=$($go env GOROOT)/src/internal/syscall/windows/at_windows.go
mkdir -p "$out/_overlay"
sed 's|^\tcase STATUS_INVALID_INFO_CLASS, // the operating system|\tcase NTStatus(0xC0000002), STATUS_INVALID_INFO_CLASS, // Wine 8.0: not implemented; the operating system|' \
  "$atw" >"$out/_overlay/at_windows.go"
grep -q 'NTStatus(0xC0000002)' "$out/_overlay/at_windows.go" ||
  { echo "check-windows: $atw has changed: the Wine overlay no longer applies (see this script's header)" >&2; exit 1; }
printf '{"Replace":{"%s":"%s"}}\n' "$atw" "$out/_overlay/at_windows.go" >"$out/_overlay/overlay.json"
win=(env CGO_ENABLED=0 GOOS=windows GOARCH=amd64)

# The cache key: the go command and its settings, the overlay, the module's requirements, and
# every file of this module's packages the test binaries are built from.
key=$({
  $go version
  "${win[@]}" $go env GOFLAGS GOAMD64 GOEXPERIMENT
  cat "$out/_overlay/at_windows.go" go.mod go.sum
  "${win[@]}" $go list -deps -test -f '{{if and .Module .Module.Main (ne .Name "main")}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .SFiles}}{{$d}}/{{.}}
{{end}}{{range .HFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{range .TestGoFiles}}{{$d}}/{{.}}
{{end}}{{range .XTestGoFiles}}{{$d}}/{{.}}
{{end}}{{range .TestEmbedFiles}}{{$d}}/{{.}}
{{end}}{{range .XTestEmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}' "${pkgs[@]/#/./}" | grep "^$root/" | sed "s|^$root/||" | sort -u | xargs sha256sum
} | sha256sum | cut -c1-16)
bins=$out/tests-$key
if [ -d "$bins" ]; then
  echo "check-windows: test binaries from the cache (build/windows/tests-$key, $((SECONDS - start)) s)"
else
  rm -rf "$out"/tests-*
  "${win[@]}" $go test -c -overlay "$out/_overlay/overlay.json" -o "$tmp/bins/" "${pkgs[@]/#/./}"
  mv "$tmp/bins" "$bins"
  echo "check-windows: test binaries built ($((SECONDS - start)) s)"
fi

# Each test binary in its package's folder, as go test runs it, with -test.v so that every skip
# shows with its reason.
mkdir -p "$out/logs"
while read -r pkg name why; do echo "check-windows: skipping $pkg $name under Wine: $why"; done <<<"$skips"
fail=0
for pkg in "${pkgs[@]}"; do
  start=$SECONDS
  name=$(basename "$pkg")
  log=$out/logs/$name.log
  skip=$(awk -v p="$pkg" '$1 == p { printf "%s%s", s, $2; s = "|" }' <<<"$skips")
  if (cd "$pkg" && timeout -k 10 420 wine "$bins/$name.test.exe" -test.count=1 -test.timeout=6m -test.v \
    ${skip:+-test.skip "^($skip)\$"} >"$log" 2>&1); then
    status=pass
  else
    status=FAIL fail=1
  fi
  # The skips the tests made themselves, with the message before each (that test's last line).
  awk '/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
    /^ *--- SKIP: / { n = $3; sub(/^ +/, "", msg[n]); print "    skipped itself: " n ": " msg[n]; next }
    /^ +[^ -]/ { msg[cur] = $0 }' "$log" | sed "s|^|check-windows: $pkg |"
  echo "check-windows: $pkg: $status under Wine, $(grep -c '^--- PASS' "$log" || true) tests pass," \
    "$(grep -c -- '--- SKIP' "$log" || true) skip ($((SECONDS - start)) s)"
  if [ $status = FAIL ]; then
    { grep -A20 -- '--- FAIL' "$log" | head -80; tail -20 "$log"; } >&2
    echo "check-windows: $pkg's tests fail under Wine (build/windows/logs/$name.log)" >&2
  fi
done

# The digests: the Linux CLI and the Windows one (as shipped) over the same models, at each tier
# this CPU runs (a cap on a tier it lacks gives the one below: left out).
start=$SECONDS
CGO_ENABLED=0 $go build -o "$tmp/trochilus" ./app/trochilus
"${win[@]}" $go build -o "$tmp/trochilus.exe" ./app/trochilus
digest_models "$tmp/trochilus" "$tmp/models"
tiers=""
for tier in scalar avx2 avx512 avx512vnni; do
  k=$(TROCHILUS_CPU_MAX=$tier "$tmp/trochilus" logits -m "$tmp/models/tiny-q8_0.gguf" --tokens 1 -c 64 2>&1 >/dev/null |
    sed -n 's/.*, kernels \([^,]*\),.*/\1/p')
  if [ "$k" = "$tier" ]; then tiers+=" $tier"; else echo "check-windows: tier $tier: not on this CPU (the cap runs $k), left out"; fi
done
echo "check-windows: CLIs and models built ($((SECONDS - start)) s)"
start=$SECONDS
digest_matrix "$tmp/models" "$tiers" "$tmp/trochilus" >"$tmp/linux.txt"
echo "check-windows: Linux digests ($((SECONDS - start)) s)"
start=$SECONDS
digest_matrix "$tmp/models" "$tiers" wine "$tmp/trochilus.exe" >"$tmp/windows.txt"
echo "check-windows: Windows digests under Wine ($((SECONDS - start)) s)"
digest_compare linux "$tmp/linux.txt" windows "$tmp/windows.txt" | sed 's/^/check-windows: /' ||
  { echo "check-windows: the Windows CLI's logits differ from Linux's" >&2; fail=1; }
# Each run on Windows with the kernels it ran on Linux: the tiers are the same code there.
paste -d ' ' "$tmp/linux.txt" "$tmp/windows.txt" | awk '$6 != $12 { print; bad = 1 } END { exit bad }' >&2 ||
  { echo "check-windows: the Windows CLI ran other kernels than Linux's" >&2; fail=1; }
[ $fail = 0 ] || { echo "check-windows: failed ($((SECONDS - total)) s in all)" >&2; exit 1; }
echo "check-windows: every Windows test passes and every digest equals Linux's ($((SECONDS - total)) s in all)"
