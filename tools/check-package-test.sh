#!/usr/bin/env bash
# The package checker's own test: from the good archives in DIST it makes copies with one thing
# wrong each (a console exe where the GUI one belongs, a CLI linking libraries beyond libc, an icon of the
# wrong size, a broken .desktop file, a missing member, an exe without its version resource, an
# amd64 CLI in an arm64 archive, an unsigned macOS CLI...)
# and requires tools/check-package.sh to reject every one with the expected message, and to
# accept an unmodified repack (the control: repacking alone must not make the checker fail).
#
# Usage: tools/check-package-test.sh [DIST [VERSION]]      (defaults: dist 0.1.0)
set -euo pipefail
dist=${1:-dist}
version=${2:-0.1.0}
check=$(cd "$(dirname "$0")" && pwd)/check-package.sh
all="linux windows linux-arm64 windows-arm64 macos-arm64"
# The folder each archive kind holds (and is named after); the Windows ones are zips.
folder() { case $1 in linux) echo "trochilus-$version-linux-amd64" ;; windows) echo "trochilus-$version-windows-amd64" ;; *) echo "trochilus-$version-$1" ;; esac; }
lname=$(folder linux) wname=$(folder windows) laname=$(folder linux-arm64) waname=$(folder windows-arm64) mname=$(folder macos-arm64)

work=$(mktemp -d "${TMPDIR:-/tmp}/check-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
good="$work/good"
mkdir -p "$good"
for side in $all; do
  case $side in
    windows*) unzip -q -d "$good" "$dist/$(folder $side).zip" ;;
    *) tar -C "$good" -xJf "$dist/$(folder $side).tar.xz" ;;
  esac
done

failures=0
# mutant NAME SIDE EXPECTED [EDIT [ARGS...]]: copy the good tree of SIDE (one of $all), run EDIT
# inside the copy (the current directory is its root), repack that archive and run the checker
# on it, which must fail with a line containing EXPECTED. The control (SIDE "all", EXPECTED "")
# repacks every archive unchanged and must pass: repacking alone breaks nothing.
mutant() {
  local name=$1 side=$2 expected=$3 tree="$work/$1" out rc sides f
  shift 3
  rm -rf "$tree" && mkdir -p "$tree" "$tree.dist"
  sides=$side
  [ "$side" = all ] && sides=$all
  for f in $sides; do cp -a "$good/$(folder $f)" "$tree/"; done
  if [ $# -gt 0 ]; then (cd "$tree" && "$@"); fi
  # xz -0 and zip -0: the checker does not care how hard the archives were compressed.
  for f in $sides; do
    f=$(folder $f)
    case $f in
      *windows*) (cd "$tree" && find "$f" -type f | sort | zip -q -0 -X -D "$tree.dist/$f.zip" -@) ;;
      *) tar -C "$tree" -cf - "$f" | xz -0 -T1 > "$tree.dist/$f.tar.xz" ;;
    esac
  done
  rc=0
  out=$(CHECK_PACKAGE_SIDES=$sides "$check" "$tree.dist" "$version" 2>&1) || rc=$?
  if [ -z "$expected" ]; then
    if [ "$rc" -eq 0 ]; then
      echo "ok    $name: accepted ($(grep -c '^ok' <<<"$out") checks passed)"
    else
      echo "FAIL  $name: rejected:"; grep '^FAIL' <<<"$out"; failures=$((failures + 1))
    fi
  elif [ "$rc" -ne 0 ] && grep '^FAIL' <<<"$out" | grep -qF -- "$expected"; then
    echo "ok    $name: rejected: $(grep '^FAIL' <<<"$out" | grep -F -- "$expected" | head -1 | cut -c7-)"
  else
    echo "FAIL  $name: want a FAIL line with \"$expected\", exit $rc, got:"; grep '^FAIL' <<<"$out" || true
    failures=$((failures + 1))
  fi
  rm -rf "$tree" "$tree.dist"
}

L=$lname W=$wname
# IHDR's width is the big-endian word at byte 16: 512 becomes 256.
narrow_png() { printf '\000\000\001\000' | dd of="$1" bs=1 seek=16 conv=notrunc status=none; }
# The version strings are UTF-16LE. rename_utf16 FILE FROM TO rewrites them in place (equal lengths).
rename_utf16() {
  FROM=$2 TO=$3 perl -0777 -pi -e \
    '($f, $t) = map { join("\0", split //, $ENV{$_}) . "\0" } qw(FROM TO); s/\Q$f\E/$t/g' "$1"
}

# unsign FILE: the Mach-O FILE's LC_CODE_SIGNATURE (load command 29) renumbered, as if unsigned.
unsign() {
  perl -e 'open(my $f, "+<:raw", $ARGV[0]) or die; local $/; my $d = <$f>; my $n = unpack("V", substr($d, 16, 4));
    for (my ($i, $o) = (0, 32); $i < $n; $i++) { my ($c, $sz) = unpack("V V", substr($d, $o, 8));
      substr($d, $o, 4) = pack("V", 0x7fff) if $c == 29; $o += $sz }
    seek($f, 0, 0); print $f $d; close($f) or die' "$1"
}

mutant control all ""
mutant cli-exe-is-gui windows "trochilus.exe: want PE32+ executable (console)" cp "$W/trochilus-app.exe" "$W/trochilus.exe"
mutant app-exe-is-console windows "trochilus-app.exe: want PE32+ executable (GUI)" cp "$W/trochilus.exe" "$W/trochilus-app.exe"
mutant app-exe-is-linux windows "trochilus-app.exe: want PE32+ executable (GUI)" cp "$good/$L/trochilus-app" "$W/trochilus-app.exe"
mutant cli-links-gl linux "trochilus: needs lib" cp "$L/trochilus-app" "$L/trochilus"
mutant cli-is-windows linux "trochilus: want ELF 64-bit x86-64" cp "$good/$W/trochilus.exe" "$L/trochilus"
mutant app-is-text linux "trochilus-app: want ELF 64-bit x86-64" cp "$L/README.txt" "$L/trochilus-app"
mutant icon-is-text linux "trochilus.png: want PNG 512 x 512" cp "$L/README.txt" "$L/trochilus.png"
mutant icon-256-wide linux "trochilus.png: want PNG 512 x 512" narrow_png "$L/trochilus.png"
mutant desktop-bad-type linux "trochilus.desktop: desktop-file-validate" sed -i 's/^Type=Application/Type=Programme/' "$L/trochilus.desktop"
mutant desktop-wrong-exec linux "trochilus.desktop: no line Exec=trochilus-app" sed -i 's/^Exec=.*/Exec=trochilus/' "$L/trochilus.desktop"
mutant linux-missing-icon linux "< $L/trochilus.png" rm "$L/trochilus.png"
mutant linux-extra-file linux "> $L/stray.o" touch "$L/stray.o"
mutant windows-missing-cli windows "< $W/trochilus.exe" rm "$W/trochilus.exe"
mutant cli-not-executable linux "$L/trochilus has mode -rw-r--r--, want -rwxr-xr-x" chmod 644 "$L/trochilus"
mutant exe-without-resources windows "trochilus.exe: no resource of type" x86_64-w64-mingw32-objcopy --remove-section=.rsrc "$W/trochilus.exe"
mutant exe-without-file-version windows "trochilus-app.exe: version info lacks FileVersion=$version" rename_utf16 "$W/trochilus-app.exe" FileVersion FileVersiom
mutant exe-other-version windows "trochilus.exe: version info lacks ProductVersion=$version" rename_utf16 "$W/trochilus.exe" "$version" "${version//[0-8]/9}"
mutant exe-without-version-block windows "trochilus.exe: no VS_VERSION_INFO" rename_utf16 "$W/trochilus.exe" VS_VERSION_INFO VS_VERSION_INFX
mutant cli-exe-with-c-runtime windows "trochilus.exe: want imports kernel32.dll only" cp "$W/trochilus-app.exe" "$W/trochilus.exe"
mutant app-needs-mingw-dll windows "trochilus-app.exe: want imports only Windows DLLs" \
  perl -pi -e 's/msvcrt\.dll/libgcc\.dll/g' "$W/trochilus-app.exe"
mutant windows-readme-lf windows "README.txt: not CRLF" sed -i 's/\r$//' "$W/README.txt"
mutant arm64-cli-is-amd64 linux-arm64 "trochilus: want ELF 64-bit arm64" cp "$good/$L/trochilus" "$laname/trochilus"
mutant arm64-missing-readme linux-arm64 "< $laname/README.txt" rm "$laname/README.txt"
mutant windows-arm64-exe-is-amd64 windows-arm64 "trochilus.exe: want PE32+ executable (console) arm64" cp "$good/$W/trochilus.exe" "$waname/trochilus.exe"
mutant windows-arm64-without-version-block windows-arm64 "trochilus.exe: no VS_VERSION_INFO" rename_utf16 "$waname/trochilus.exe" VS_VERSION_INFO VS_VERSION_INFX
mutant windows-arm64-readme-lf windows-arm64 "README.txt: not CRLF" sed -i 's/\r$//' "$waname/README.txt"
mutant macos-cli-is-linux macos-arm64 "trochilus: want Mach-O 64-bit arm64" cp "$good/$laname/trochilus" "$mname/trochilus"
mutant macos-cli-unsigned macos-arm64 "trochilus: no code signature" unsign "$mname/trochilus"
mutant macos-cli-not-executable macos-arm64 "$mname/trochilus has mode -rw-r--r--, want -rwxr-xr-x" chmod 644 "$mname/trochilus"

if [ "$failures" -ne 0 ]; then echo "check-package-test: $failures case(s) wrong"; exit 1; fi
echo "check-package-test: the checker rejects every broken package and accepts the good one"
