#!/bin/sh
# Installs Trochilus for the current user: the two programs into $PREFIX/bin, the desktop entry
# and the icon where desktops look for them. PREFIX defaults to ~/.local.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${PREFIX:-$HOME/.local}
install -Dm755 "$here/trochilus" "$prefix/bin/trochilus"
install -Dm755 "$here/trochilus-app" "$prefix/bin/trochilus-app"
install -Dm644 "$here/trochilus.png" "$prefix/share/icons/hicolor/512x512/apps/trochilus.png"
desktop=$(mktemp)
sed "s|^Exec=trochilus-app|Exec=$prefix/bin/trochilus-app|" "$here/trochilus.desktop" > "$desktop"
install -Dm644 "$desktop" "$prefix/share/applications/trochilus.desktop"
rm -f "$desktop"
echo "Installed into $prefix (make sure $prefix/bin is on your PATH)."
