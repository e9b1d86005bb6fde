#!/usr/bin/env bash
# Builds the release archives into dist/:
#   trochilus-VERSION-linux-amd64.tar.xz     both programs, .desktop file, icon, install.sh
#   trochilus-VERSION-windows-amd64.zip      both .exe files with icon, version info and manifest
# The Windows window app is cross-compiled with mingw-w64 (Debian gcc-mingw-w64-x86-64).
#
# The programs are built from a snapshot of the working tree's sources in a temporary folder,
# where the Windows resource files (.syso) can be dropped beside each main package without
# touching the checkout. `fyne package` is not used: it rewrites FyneApp.toml on every run.
#
# Usage: packaging/package.sh           VERSION=1.2.3 packaging/package.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-0.1.0}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "package: VERSION=$version is not x.y.z" >&2; exit 2
fi
dist="$root/dist"
work=$(mktemp -d "${TMPDIR:-/tmp}/trochilus-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

for tool in x86_64-w64-mingw32-gcc x86_64-w64-mingw32-windres xz zip; do
  command -v "$tool" >/dev/null || { echo "package: $tool is missing (apt-get install gcc-mingw-w64-x86-64 xz-utils zip)" >&2; exit 1; }
done

# Sources: the tracked and untracked-but-not-ignored files (Go, assembly, embedded assets),
# without tests, test data and documents.
src="$work/src"
mkdir -p "$src"
git ls-files -z -co --exclude-standard |
  grep -zEv '(^|/)testdata/|_test\.go$|^docs/|^tools/|\.md$' | xargs -0 cp --parents -t "$src"

ldflags="-s -w"
build() { # build GOOS CGO OUT PKG [extra go build flags...]
  local goos=$1 cgo=$2 out=$3 pkg=$4; shift 4
  echo "package: building $out"
  (cd "$src" && GOOS=$goos GOARCH=amd64 CGO_ENABLED=$cgo go build -trimpath -ldflags "$ldflags $*" -o "$out" "$pkg")
}

# Linux.
lin="$work/trochilus-$version-linux-amd64"
mkdir -p "$lin"
build linux 0 "$lin/trochilus" ./app/trochilus
build linux 1 "$lin/trochilus-app" ./app/trochilus-app
cp packaging/trochilus.desktop packaging/install.sh "$lin/"
cp assets/icon.png "$lin/trochilus.png"
sed "s/@VERSION@/$version/" packaging/README.txt > "$lin/README.txt"

# Windows: one resource file per program, compiled by windres into the package folder.
resource() { # resource NAME FILE DESCRIPTION PKGDIR
  local rc="$work/$1.rc"
  sed -e "s/@NAME@/$1/" -e "s/@FILE@/$2/" -e "s/@DESCRIPTION@/$3/" -e "s/@VERSION@/$version/" \
      -e "s/@VERSION_COMMAS@/${version//./,},0/" packaging/trochilus.rc.in > "$rc"
  cp assets/icon.ico packaging/trochilus.manifest "$work/"
  (cd "$work" && x86_64-w64-mingw32-windres -i "$rc" -O coff -o "$src/$4/rsrc_windows_amd64.syso")
}
win="$work/trochilus-$version-windows-amd64"
mkdir -p "$win"
resource trochilus trochilus.exe "Trochilus command-line tool" app/trochilus
resource trochilus-app trochilus-app.exe "Trochilus" app/trochilus-app
build windows 0 "$win/trochilus.exe" ./app/trochilus
CC=x86_64-w64-mingw32-gcc build windows 1 "$win/trochilus-app.exe" ./app/trochilus-app -H=windowsgui
sed "s/@VERSION@/$version/" packaging/README.txt | sed 's/$/\r/' > "$win/README.txt"

mkdir -p "$dist"
tar -C "$work" -cJf "$dist/trochilus-$version-linux-amd64.tar.xz" "$(basename "$lin")"
rm -f "$dist/trochilus-$version-windows-amd64.zip"
(cd "$work" && zip -qr "$dist/trochilus-$version-windows-amd64.zip" "$(basename "$win")")
ls -l "$dist"/trochilus-"$version"-*
