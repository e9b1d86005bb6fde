#!/usr/bin/env bash
# Builds the release archives into dist/ (git-ignored):
#   trochilus-VERSION-linux-amd64.tar.xz     both programs, .desktop file, icon, install.sh, README
#   trochilus-VERSION-windows-amd64.zip      both .exe files with icon, version info and manifest
# The Windows window app is cross-compiled with mingw-w64 (Debian gcc-mingw-w64-x86-64);
# tools/check-package.sh checks what comes out.
#
# The checkout is never written outside dist/: the programs are built from a snapshot of the
# working tree's sources in a temporary folder, where the Windows resource files (.syso) can sit
# beside each main package. `fyne package` is not used because it bumps the build number in
# FyneApp.toml on every run.
#
# The archives are reproducible: the same sources, VERSION and SOURCE_DATE_EPOCH (default: the
# last commit's time) give the same bytes. The Go build cache ($GOCACHE) is what makes a rebuild
# fast; the cold build of GLFW and go-gl for two systems is most of a first run.
#
# Usage: packaging/package.sh           VERSION=1.2.3 DIST=out packaging/package.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${VERSION:-0.1.0}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "package: VERSION=$version is not x.y.z" >&2; exit 2
fi
dist=$(mkdir -p "${DIST:-dist}" && cd "${DIST:-dist}" && pwd)
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 315532800)
fi
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C

for tool in git x86_64-w64-mingw32-gcc x86_64-w64-mingw32-windres xz zip; do
  command -v "$tool" >/dev/null || { echo "package: $tool is missing (run tools/deps.sh)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/trochilus-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$SECONDS
step() { echo "package: [$((SECONDS - start))s] $*"; }

# Sources: the tracked and untracked-but-not-ignored files (Go, assembly, embedded assets),
# without tests, test data and documents. Files deleted but not yet committed are skipped.
src="$work/src"
mkdir -p "$src"
git ls-files -z -co --exclude-standard |
  grep -zEv '(^|/)testdata/|_test\.go$|^docs/|^tools/|\.md$' |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  xargs -0 cp --parents -t "$src"

build() { # build GOOS CGO OUT PKG [extra -ldflags...]
  local goos=$1 cgo=$2 out=$3 pkg=$4; shift 4
  step "building $(basename "$(dirname "$out")")/$(basename "$out")"
  (cd "$src" && GOOS=$goos GOARCH=amd64 CGO_ENABLED=$cgo \
    go build -trimpath -buildvcs=false -ldflags "-s -w $*" -o "$out" "$pkg")
}

# Linux.
lin="$work/trochilus-$version-linux-amd64"
mkdir -p "$lin"
build linux 0 "$lin/trochilus" ./app/trochilus
build linux 1 "$lin/trochilus-app" ./app/trochilus-app
cp packaging/trochilus.desktop packaging/install.sh "$lin/"
cp assets/icon.png "$lin/trochilus.png"
sed "s/@VERSION@/$version/" packaging/README.txt > "$lin/README.txt"

# Windows: one resource file per program, compiled by windres beside its main package.
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
# GNU ld stamps PE files with the link time unless told not to.
CC=x86_64-w64-mingw32-gcc build windows 1 "$win/trochilus-app.exe" ./app/trochilus-app \
  -H=windowsgui -extldflags=-Wl,--no-insert-timestamp
sed "s/@VERSION@/$version/" packaging/README.txt | sed 's/$/\r/' > "$win/README.txt"

# Archives with fixed modes, owners, order and times, so equal inputs give equal bytes.
step "archiving"
chmod -R u=rwX,go=rX "$lin" "$win"
chmod 0755 "$lin/trochilus" "$lin/trochilus-app" "$lin/install.sh"
find "$lin" "$win" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
linux_archive="$dist/trochilus-$version-linux-amd64.tar.xz"
windows_archive="$dist/trochilus-$version-windows-amd64.zip"
tar -C "$work" --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
  --mtime="@$SOURCE_DATE_EPOCH" -cf - "$(basename "$lin")" | xz -T1 -6 > "$linux_archive.tmp"
mv "$linux_archive.tmp" "$linux_archive"
rm -f "$windows_archive.tmp"
(cd "$work" && find "$(basename "$win")" -type f | sort | zip -q -X -D "$windows_archive.tmp" -@)
mv "$windows_archive.tmp" "$windows_archive"
step "done"
ls -l "$linux_archive" "$windows_archive"
