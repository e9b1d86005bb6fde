#!/usr/bin/env bash
# Builds the release archives into dist/ (git-ignored):
#   trochilus-VERSION-linux-amd64.tar.xz     both programs, .desktop file, icon, install.sh, README
#   trochilus-VERSION-windows-amd64.zip      both .exe files with icon, version info and manifest
#   trochilus-VERSION-linux-arm64.tar.xz     the CLI and README
#   trochilus-VERSION-windows-arm64.zip      the CLI's .exe (icon, version info, manifest) and README
#   trochilus-VERSION-macos-arm64.tar.xz     the CLI (signed ad hoc by Go's linker) and README
# The Windows window app is cross-compiled with mingw-w64 (Debian gcc-mingw-w64-x86-64). The
# window app of the arm64 systems and macOS is not: its cgo needs their C libraries (GL, X11) or
# the macOS SDK, so those archives hold the CLI, which has no cgo. tools/check-package.sh checks
# what comes out.
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

build() { # build GOOS GOARCH CGO OUT PKG [extra -ldflags...]
  local goos=$1 goarch=$2 cgo=$3 out=$4 pkg=$5; shift 5
  step "building $(basename "$(dirname "$out")")/$(basename "$out")"
  (cd "$src" && GOOS=$goos GOARCH=$goarch CGO_ENABLED=$cgo \
    go build -trimpath -buildvcs=false -ldflags "-s -w $*" -o "$out" "$pkg")
}
readme() { sed "s/@VERSION@/$version/" packaging/README.txt; }

# Linux.
lin="$work/trochilus-$version-linux-amd64"
mkdir -p "$lin"
build linux amd64 0 "$lin/trochilus" ./app/trochilus
build linux amd64 1 "$lin/trochilus-app" ./app/trochilus-app
cp packaging/trochilus.desktop packaging/install.sh "$lin/"
cp assets/icon.png "$lin/trochilus.png"
readme > "$lin/README.txt"

# Windows: one resource file per program and architecture, compiled by windres beside its main
# package (rsrc_windows_ARCH.syso: Go links the one of the architecture it builds).
resource() { # resource NAME FILE DESCRIPTION PKGDIR ARCH
  local rc="$work/$1.rc" syso="$src/$4/rsrc_windows_$5.syso"
  sed -e "s/@NAME@/$1/" -e "s/@FILE@/$2/" -e "s/@DESCRIPTION@/$3/" -e "s/@VERSION@/$version/" \
      -e "s/@VERSION_COMMAS@/${version//./,},0/" packaging/trochilus.rc.in > "$rc"
  cp assets/icon.ico packaging/trochilus.manifest "$work/"
  (cd "$work" && x86_64-w64-mingw32-windres -i "$rc" -O coff -o "$syso")
  # Debian's windres writes x86-64 objects only. A resource object holds no code: its .rsrc
  # section is the same on arm64, and its relocations are all IMAGE_REL_AMD64_ADDR32NB (the
  # RVAs of the data), which on arm64 is IMAGE_REL_ARM64_ADDR32NB: the object with its machine
  # and those relocation types rewritten is the arm64 one.
  [ "$5" = arm64 ] && perl -e '
    open(my $f, "+<:raw", $ARGV[0]) or die "$ARGV[0]: $!\n";
    local $/; my $d = <$f>;
    my ($machine, $sections, $opt) = unpack("v v x12 v", $d);
    die "$ARGV[0]: not an x86-64 COFF object\n" unless $machine == 0x8664 && $opt == 0;
    substr($d, 0, 2) = pack("v", 0xAA64);
    for my $s (0 .. $sections - 1) {
      my ($relocs, $n) = unpack("V x4 v", substr($d, 20 + 40 * $s + 24, 10));
      for my $r (0 .. $n - 1) {
        my $at = $relocs + 10 * $r + 8;
        my $type = unpack("v", substr($d, $at, 2));
        die "$ARGV[0]: relocation of type $type, want only ADDR32NB (3)\n" unless $type == 3;
        substr($d, $at, 2) = pack("v", 2);
      }
    }
    seek($f, 0, 0); print $f $d; close($f) or die "$ARGV[0]: $!\n";' "$syso"
  return 0
}
crlf() { sed 's/$/\r/'; }
win="$work/trochilus-$version-windows-amd64"
mkdir -p "$win"
resource trochilus trochilus.exe "Trochilus command-line tool" app/trochilus amd64
resource trochilus-app trochilus-app.exe "Trochilus" app/trochilus-app amd64
build windows amd64 0 "$win/trochilus.exe" ./app/trochilus
# GNU ld stamps PE files with the link time unless told not to.
CC=x86_64-w64-mingw32-gcc build windows amd64 1 "$win/trochilus-app.exe" ./app/trochilus-app \
  -H=windowsgui -extldflags=-Wl,--no-insert-timestamp
readme | crlf > "$win/README.txt"

# The arm64 systems and macOS: the CLI alone (see the top).
lina="$work/trochilus-$version-linux-arm64"
wina="$work/trochilus-$version-windows-arm64"
mac="$work/trochilus-$version-macos-arm64"
mkdir -p "$lina" "$wina" "$mac"
build linux arm64 0 "$lina/trochilus" ./app/trochilus
readme > "$lina/README.txt"
resource trochilus trochilus.exe "Trochilus command-line tool" app/trochilus arm64
build windows arm64 0 "$wina/trochilus.exe" ./app/trochilus
readme | crlf > "$wina/README.txt"
build darwin arm64 0 "$mac/trochilus" ./app/trochilus
readme > "$mac/README.txt"

# Archives with fixed modes, owners, order and times, so equal inputs give equal bytes.
step "archiving"
chmod -R u=rwX,go=rX "$lin" "$win" "$lina" "$wina" "$mac"
chmod 0755 "$lin/trochilus" "$lin/trochilus-app" "$lin/install.sh" "$lina/trochilus" "$mac/trochilus"
find "$lin" "$win" "$lina" "$wina" "$mac" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
archives=()
tar_xz() { # tar_xz DIR: dist/DIR.tar.xz
  local a="$dist/$(basename "$1").tar.xz"
  tar -C "$work" --sort=name --format=gnu --owner=0 --group=0 --numeric-owner \
    --mtime="@$SOURCE_DATE_EPOCH" -cf - "$(basename "$1")" | xz -T1 -6 > "$a.tmp"
  mv "$a.tmp" "$a"
  archives+=("$a")
}
zip_dir() { # zip_dir DIR: dist/DIR.zip
  local a="$dist/$(basename "$1").zip"
  rm -f "$a.tmp"
  (cd "$work" && find "$(basename "$1")" -type f | sort | zip -q -X -D "$a.tmp" -@)
  mv "$a.tmp" "$a"
  archives+=("$a")
}
tar_xz "$lin"
zip_dir "$win"
tar_xz "$lina"
zip_dir "$wina"
tar_xz "$mac"
step "done"
ls -l "${archives[@]}"
