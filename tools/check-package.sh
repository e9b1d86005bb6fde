#!/usr/bin/env bash
# Checks the archives packaging/package.sh wrote: the members of each and their modes, the file
# type of every program (`file`), the .desktop file (desktop-file-validate), the icon, in the
# Windows exes the resources (version strings, icon, manifest) and the DLLs they import, and the
# macOS CLI's code signature. Prints one line per check; exits 1 if any failed.
#
# Usage: tools/check-package.sh [DIST [VERSION]]      (defaults: dist 0.1.0)
# CHECK_PACKAGE_SIDES names the archives to check (default: all five: linux windows linux-arm64
# windows-arm64 macos-arm64); tools/check-package-test.sh uses it to spend its time on the
# archive it broke.
set -uo pipefail
dist=${1:-dist}
version=${2:-0.1.0}
sides=" ${CHECK_PACKAGE_SIDES:-linux windows linux-arm64 windows-arm64 macos-arm64} "
export LC_ALL=C

for tool in tar xz unzip file strings desktop-file-validate x86_64-w64-mingw32-objdump; do
  command -v "$tool" >/dev/null || { echo "check-package: $tool is missing (run tools/deps.sh package)" >&2; exit 1; }
done

failed=0
ok() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failed=1; }

# expect_type FILE REGEX WHAT: `file -b FILE` must match REGEX.
expect_type() {
  local got
  got=$(file -b "$1")
  if [[ $got =~ $2 ]]; then ok "$(basename "$1"): $3 ($got)"; else fail "$(basename "$1"): want $3, file says: $got"; fi
}

# expect_needed FILE LIBS: the ELF FILE needs no shared library outside LIBS.
expect_needed() {
  local needed extra=""
  if ! command -v readelf >/dev/null; then fail "$(basename "$1"): readelf (binutils) is not installed"; return; fi
  needed=$(readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
  for n in $needed; do
    [[ " $2 " == *" $n "* ]] || extra+="$n "
  done
  if [ -z "$extra" ]; then ok "$(basename "$1"): needs only ${needed:-nothing}"; else fail "$(basename "$1"): needs $extra(only the C library is allowed: $2)"; fi
}

# expect_members WHAT GOT WANT: two newline-separated, sorted lists must be equal.
expect_members() {
  local d
  if d=$(diff <(echo "$3") <(echo "$2")); then
    ok "$1: members $(echo "$2" | tr '\n' ' ')"
  else
    fail "$1: members differ (< missing, > unexpected): $(echo "$d" | grep '^[<>]' | tr '\n' ' ')"
  fi
}

# expect_mode WHAT LISTING NAME MODE: the archive listing (tar -tv) gives NAME the mode MODE.
expect_mode() {
  local got
  got=$(awk -v n="$3" '$NF == n { print $1 }' <<<"$2")
  if [ "$got" = "$4" ]; then ok "$1: $3 is $4"; else fail "$1: $3 has mode ${got:-(none)}, want $4"; fi
}

# Both PE layouts of `file`'s output: 5.44 (Debian 12) "PE32+ executable (console) x86-64, for MS
# Windows", 5.46 (Debian 13) "PE32+ executable for MS Windows 6.01 (console), x86-64". pe
# SUBSYSTEM [ARCH] (default x86-64; arm64 is "Aarch64").
pe() { echo "^PE32\+ executable (for MS Windows [0-9.]+ )?\($1\),? ${2:-x86-64}"; }
elf='^ELF 64-bit LSB (pie )?executable, x86-64,'
elf_arm64='^ELF 64-bit LSB (pie )?executable, ARM aarch64,'

# expect_windows_resources EXE NAME FILE: version strings, icon and manifest in the .rsrc section.
expect_windows_resources() {
  local exe=$1 base types t s want
  base=$(basename "$exe")
  # objdump -p prints the resource tree indented by level; the entries of the type table (three
  # spaces in) are the resource types: 3 RT_ICON, 14 RT_GROUP_ICON, 16 RT_VERSION, 24 RT_MANIFEST.
  types=$(x86_64-w64-mingw32-objdump -p "$exe" 2>/dev/null |
    awk '/^The \.rsrc Resource Directory section/ { r = 1 } r && /^[0-9a-f]+   Entry: ID: 0x/ { sub(/,$/, "", $4); print $4 }' |
    while read -r id; do echo $((id)); done | sort -n | xargs)
  for t in 3 14 16 24; do
    if [[ " $types " != *" $t "* ]]; then fail "$base: no resource of type $t (has: ${types:-none})"; return; fi
  done
  ok "$base: resources icon, icon group, version, manifest (types $types)"
  # VS_VERSION_INFO's strings are UTF-16LE; each key is followed by its value.
  s=$(strings -el -n 2 "$exe")
  if grep -qx VS_VERSION_INFO <<<"$s"; then ok "$base: VS_VERSION_INFO"; else fail "$base: no VS_VERSION_INFO"; fi
  for want in "FileVersion=$version" "ProductVersion=$version" "ProductName=Trochilus" \
    "InternalName=$2" "OriginalFilename=$3"; do
    if grep -A1 -x "${want%%=*}" <<<"$s" | grep -qx "${want#*=}"; then
      ok "$base: $want"
    else
      fail "$base: version info lacks $want"
    fi
  done
  if grep -q 'PerMonitorV2' "$exe"; then ok "$base: manifest (PerMonitorV2)"; else fail "$base: no manifest"; fi
}

# expect_imports EXE REGEX WHAT: the DLLs EXE imports, lower-cased and joined by spaces, must match REGEX.
expect_imports() {
  local dlls
  dlls=$(x86_64-w64-mingw32-objdump -p "$1" 2>/dev/null | awk '/^\tDLL Name: / { print tolower($3) }' | sort -u | xargs)
  if [[ $dlls =~ $2 ]]; then ok "$(basename "$1"): $3 ($dlls)"; else fail "$(basename "$1"): want $3, imports: ${dlls:-none}"; fi
}

# x86_view EXE DIR: a copy of the PE file EXE in DIR whose COFF machine says x86-64, for
# Debian's objdump, which reads no other machine's PE files; the resource tree and the import
# table it prints are the same on every machine.
x86_view() {
  local off
  mkdir -p "$2" && cp "$1" "$2/"
  off=$(od -An -t u4 -j 60 -N 4 "$1" | tr -d ' ') # e_lfanew: where "PE\0\0" and the COFF header are
  printf '\x64\x86' | dd of="$2/$(basename "$1")" bs=1 seek=$((off + 4)) conv=notrunc status=none
}

# expect_signed FILE: the Mach-O FILE has a code signature (LC_CODE_SIGNATURE, load command 29):
# macOS on Apple silicon runs no unsigned program; Go's linker signs ad hoc.
expect_signed() {
  local magic n off=32 i cmd size
  magic=$(od -An -t x4 -N 4 "$1" | tr -d ' ') # mach_header_64's magic, then its ncmds
  n=$(od -An -t u4 -j 16 -N 4 "$1" | tr -d ' ')
  if [ "$magic" != feedfacf ]; then fail "$(basename "$1"): not a 64-bit Mach-O file, so unsigned"; return; fi
  for ((i = 0; i < ${n:-0} && i < 256; i++)); do # the commands follow the 32-byte header
    read -r cmd size < <(od -An -t u4 -j $off -N 8 "$1")
    if [ "${cmd:-}" = 29 ]; then ok "$(basename "$1"): code signature (ad hoc)"; return; fi
    [ "${size:-0}" -gt 0 ] || break
    off=$((off + size))
  done
  fail "$(basename "$1"): no code signature (LC_CODE_SIGNATURE): macOS on Apple silicon will not run it"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/check-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

# open_tar NAME EXECUTABLES MEMBERS...: checks that dist/NAME.tar.xz reads, holds the folder NAME
# with MEMBERS alone, each of EXECUTABLES (space-separated) with mode 755, and extracts it into
# the work folder; fails (status 1) if it does not read.
open_tar() {
  local name=$1 exes=$2 archive="$dist/$1.tar.xz" out="" listing="" f
  shift 2
  # Decompressed once: listing and extracting each read the tar.
  if ! out=$(xz -dc "$archive" 2>&1 >"$work/$name.tar") || ! listing=$(tar -tvf "$work/$name.tar" 2>&1); then
    fail "$archive: not a readable tar.xz: $out$listing"
    return 1
  fi
  ok "$archive: $(stat -c %s "$archive") bytes"
  expect_members "$name.tar.xz" "$(awk '{ print $NF }' <<<"$listing" | sort)" "$(printf "$name/%s\n" '' "$@" | sort)"
  for f in $exes; do expect_mode "$name.tar.xz" "$listing" "$name/$f" -rwxr-xr-x; done
  tar -C "$work" -xf "$work/$name.tar"
}

# open_zip NAME MEMBERS...: checks that dist/NAME.zip reads and holds the folder NAME with MEMBERS
# alone, and extracts it into the work folder; fails (status 1) if it does not read.
open_zip() {
  local name=$1 archive="$dist/$1.zip" members
  shift
  if ! members=$(unzip -Z1 "$archive" 2>&1); then
    fail "$archive: not a readable zip: $members"
    return 1
  fi
  ok "$archive: $(stat -c %s "$archive") bytes"
  expect_members "$name.zip" "$(sort <<<"$members")" "$(printf "$name/%s\n" "$@" | sort)"
  unzip -q -d "$work" "$archive"
}

# expect_readme FILE: the README names this version.
expect_readme() {
  if grep -q "Trochilus $version " "$1" 2>/dev/null; then ok "README.txt: version $version"; else fail "README.txt: no 'Trochilus $version'"; fi
}

# expect_crlf FILE: the Windows README has CRLF line ends.
expect_crlf() {
  if [ -f "$1" ] && grep -q $'\r$' "$1"; then ok "README.txt: CRLF line ends"; else fail "README.txt: not CRLF"; fi
}

# check_linux: the tar.xz with both programs, the .desktop entry, the icon and install.sh.
check_linux() {
  local lname out l want
  lname="trochilus-$version-linux-amd64"
  if open_tar "$lname" "trochilus trochilus-app install.sh" \
    README.txt install.sh trochilus trochilus-app trochilus.desktop trochilus.png; then
    l="$work/$lname"
    # The CLI has no cgo; it links the C library alone (purego's dlopen, to open libcuda when
    # there is one), so it runs on any glibc system with nothing installed.
    if [ -f "$l/trochilus" ]; then
      expect_type "$l/trochilus" "$elf" "ELF 64-bit x86-64"
      expect_needed "$l/trochilus" "libc.so.6 libdl.so.2 libpthread.so.0"
    fi
    [ -f "$l/trochilus-app" ] && expect_type "$l/trochilus-app" "$elf" "ELF 64-bit x86-64"
    [ -f "$l/trochilus.png" ] && expect_type "$l/trochilus.png" '^PNG image data, 512 x 512,' "PNG 512 x 512"
    if [ -f "$l/trochilus.desktop" ]; then
      if out=$(desktop-file-validate "$l/trochilus.desktop" 2>&1) && ! grep -qE ': (error|warning): ' <<<"$out"; then
        ok "trochilus.desktop: desktop-file-validate${out:+ (notes: $out)}"
      else
        fail "trochilus.desktop: desktop-file-validate: ${out:-exit status}"
      fi
      # The entry must start the program and name the icon this archive installs.
      for want in Exec=trochilus-app Icon=trochilus; do
        if grep -qx "$want" "$l/trochilus.desktop"; then ok "trochilus.desktop: $want"; else fail "trochilus.desktop: no line $want"; fi
      done
    fi
    if [ -f "$l/install.sh" ]; then
      if out=$(sh -n "$l/install.sh" 2>&1); then ok "install.sh: sh -n"; else fail "install.sh: $out"; fi
    fi
    expect_readme "$l/README.txt"
  fi
}

# check_windows: the zip with the console CLI and the GUI app, each with its resources.
check_windows() {
  local wname w
  wname="trochilus-$version-windows-amd64"
  if open_zip "$wname" README.txt trochilus.exe trochilus-app.exe; then
    w="$work/$wname"
    if [ -f "$w/trochilus.exe" ]; then
      expect_type "$w/trochilus.exe" "$(pe console)" "PE32+ executable (console) x86-64"
      expect_windows_resources "$w/trochilus.exe" trochilus trochilus.exe
      # Built without cgo, the CLI needs nothing but kernel32.
      expect_imports "$w/trochilus.exe" '^kernel32\.dll$' "imports kernel32.dll only"
    fi
    if [ -f "$w/trochilus-app.exe" ]; then
      expect_type "$w/trochilus-app.exe" "$(pe GUI)" "PE32+ executable (GUI) x86-64"
      expect_windows_resources "$w/trochilus-app.exe" trochilus-app trochilus-app.exe
      # Windows' own DLLs only: a mingw runtime DLL (libgcc_s_seh-1.dll, libwinpthread-1.dll) is
      # not in the archive, so the app would not start.
      expect_imports "$w/trochilus-app.exe" '^([a-z0-9_]+32|msvcrt|ntdll)\.dll( ([a-z0-9_]+32|msvcrt|ntdll)\.dll)*$' \
        "imports only Windows DLLs"
    fi
    expect_crlf "$w/README.txt"
  fi
}

# check_linux_arm64: the tar.xz with the arm64 CLI, which like amd64's links the C library alone.
check_linux_arm64() {
  local name="trochilus-$version-linux-arm64" l
  if open_tar "$name" trochilus README.txt trochilus; then
    l="$work/$name"
    if [ -f "$l/trochilus" ]; then
      expect_type "$l/trochilus" "$elf_arm64" "ELF 64-bit arm64"
      expect_needed "$l/trochilus" "libc.so.6 libdl.so.2 libpthread.so.0"
    fi
    expect_readme "$l/README.txt"
  fi
}

# check_windows_arm64: the zip with the arm64 console CLI and its resources.
check_windows_arm64() {
  local name="trochilus-$version-windows-arm64" w
  if open_zip "$name" README.txt trochilus.exe; then
    w="$work/$name"
    if [ -f "$w/trochilus.exe" ]; then
      expect_type "$w/trochilus.exe" "$(pe console Aarch64)" "PE32+ executable (console) arm64"
      x86_view "$w/trochilus.exe" "$work/x86-view"
      expect_windows_resources "$work/x86-view/trochilus.exe" trochilus trochilus.exe
      expect_imports "$work/x86-view/trochilus.exe" '^kernel32\.dll$' "imports kernel32.dll only"
    fi
    expect_crlf "$w/README.txt"
  fi
}

# check_macos_arm64: the tar.xz with the macOS CLI for Apple silicon, signed.
check_macos_arm64() {
  local name="trochilus-$version-macos-arm64" m
  if open_tar "$name" trochilus README.txt trochilus; then
    m="$work/$name"
    if [ -f "$m/trochilus" ]; then
      expect_type "$m/trochilus" '^Mach-O 64-bit arm64 executable' "Mach-O 64-bit arm64"
      expect_signed "$m/trochilus"
    fi
    expect_readme "$m/README.txt"
  fi
}

for side in $sides; do
  echo "--    $side"
  if declare -F "check_${side//-/_}" >/dev/null; then "check_${side//-/_}"; else fail "no archive kind $side"; fi
done

if [ "$failed" -ne 0 ]; then echo "check-package: FAILED"; exit 1; fi
echo "check-package: all good"
