#!/usr/bin/env bash
# Checks the archives packaging/package.sh wrote: the members of each and their modes, the file
# type of every program (`file`), the .desktop file (desktop-file-validate), the icon, and in the
# Windows exes the resources (version strings, icon, manifest) and the DLLs they import. Prints
# one line per check; exits 1 if any failed.
#
# Usage: tools/check-package.sh [DIST [VERSION]]      (defaults: dist 0.1.0)
# CHECK_PACKAGE_SIDES=linux (or windows) checks one archive only; tools/check-package-test.sh
# uses it to spend its time on the archive it broke.
set -uo pipefail
dist=${1:-dist}
version=${2:-0.1.0}
sides=" ${CHECK_PACKAGE_SIDES:-linux windows} "
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
# Windows", 5.46 (Debian 13) "PE32+ executable for MS Windows 6.01 (console), x86-64".
pe() { echo "^PE32\+ executable (for MS Windows [0-9.]+ )?\($1\),? x86-64"; }
elf='^ELF 64-bit LSB (pie )?executable, x86-64,'

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

work=$(mktemp -d "${TMPDIR:-/tmp}/check-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

# check_linux: the tar.xz with both programs, the .desktop entry, the icon and install.sh.
check_linux() {
  local lname larchive out listing l f want
  lname="trochilus-$version-linux-amd64"
  larchive="$dist/$lname.tar.xz"
  # Decompressed once: listing and extracting each read the tar.
  out="" listing=""
  if ! out=$(xz -dc "$larchive" 2>&1 >"$work/linux.tar") || ! listing=$(tar -tvf "$work/linux.tar" 2>&1); then
    fail "$larchive: not a readable tar.xz: $out$listing"
  else
    ok "$larchive: $(stat -c %s "$larchive") bytes"
    expect_members "$lname.tar.xz" "$(awk '{ print $NF }' <<<"$listing" | sort)" \
      "$(printf "$lname/%s\n" '' README.txt install.sh trochilus trochilus-app trochilus.desktop trochilus.png | sort)"
    for f in trochilus trochilus-app install.sh; do expect_mode "$lname.tar.xz" "$listing" "$lname/$f" -rwxr-xr-x; done
    tar -C "$work" -xf "$work/linux.tar"
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
    if grep -q "Trochilus $version " "$l/README.txt" 2>/dev/null; then ok "README.txt: version $version"; else fail "README.txt: no 'Trochilus $version'"; fi
  fi
}

# check_windows: the zip with the console CLI and the GUI app, each with its resources.
check_windows() {
  local wname warchive members w
  wname="trochilus-$version-windows-amd64"
  warchive="$dist/$wname.zip"
  if ! members=$(unzip -Z1 "$warchive" 2>&1); then
    fail "$warchive: not a readable zip: $members"
  else
    ok "$warchive: $(stat -c %s "$warchive") bytes"
    expect_members "$wname.zip" "$(sort <<<"$members")" \
      "$(printf "$wname/%s\n" README.txt trochilus.exe trochilus-app.exe | sort)"
    unzip -q -d "$work" "$warchive"
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
    if [ -f "$w/README.txt" ] && grep -q $'\r$' "$w/README.txt"; then ok "README.txt: CRLF line ends"; else fail "README.txt: not CRLF"; fi
  fi
}

[[ $sides == *" linux "* ]] && check_linux
[[ $sides == *" windows "* ]] && check_windows

if [ "$failed" -ne 0 ]; then echo "check-package: FAILED"; exit 1; fi
echo "check-package: all good"
