#!/usr/bin/env bash
# Builds the window app, runs it in screenshot mode ($TROCHILUS_SCREENSHOTS) under Xvfb with
# Mesa's software GL, so the real GLFW driver draws each screen to DIR/NAME.png, then checks
# every PNG's size and that it is not blank (tools/checkscreenshots).
# Usage: tools/screenshot.sh DIR   (make screenshot: build/screenshots)
set -euo pipefail
dir=${1:?usage: tools/screenshot.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
go=${GO:-go}
command -v Xvfb >/dev/null || { echo "screenshot: Xvfb is missing: run tools/deps.sh test" >&2; exit 1; }

mkdir -p "$dir" bin
rm -f "$dir"/models.png "$dir"/chat.png "$dir"/machine.png
CGO_ENABLED=1 $go build -trimpath -o bin/trochilus-app ./app/trochilus-app
# Mesa's llvmpipe reads the window back as black under Xvfb (glReadPixels on the front
# buffer); softpipe, the plain software rasteriser, reads back what it drew. The app quits on
# its own (and gives up after 3 minutes); timeout is the backstop should Xvfb itself hang.
# The app keeps its data and settings in a temporary folder it removes; a TMPDIR of our own,
# removed here too, catches whatever Fyne's settings watcher recreates as the app exits.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# LANG: Fyne cannot parse the C locale (a CI default) and would log an error; the screenshots
# are meant in English anyway.
# Xvfb picks a free display itself and writes its number to -displayfd once it accepts
# clients: reading it waits for exactly that. -noreset: an X server resets when its last client
# disconnects, and the app's own display check (display_unix.go) is a client that connects and
# leaves, so GLFW's connection right after it sometimes met a resetting server ("Failed to open
# display", 4 of 12 runs under load; 0 of 20 with -noreset).
mkfifo "$tmp/display"
Xvfb -displayfd 3 -noreset -nolisten tcp -screen 0 1280x800x24 3>"$tmp/display" 2>"$tmp/xvfb.log" &
xvfb=$!
trap 'kill $xvfb 2>/dev/null; rm -rf "$tmp"' EXIT
read -r display < "$tmp/display" || true
if [ -z "$display" ]; then
  echo "screenshot: Xvfb did not start:" >&2
  cat "$tmp/xvfb.log" >&2
  exit 1
fi
LANG=en_US.UTF-8 LC_ALL= LC_MESSAGES= DISPLAY=":$display" \
  TMPDIR="$tmp" LIBGL_ALWAYS_SOFTWARE=1 GALLIUM_DRIVER=softpipe TROCHILUS_SCREENSHOTS="$dir" \
  timeout 240 bin/trochilus-app
CGO_ENABLED=0 $go run ./tools/checkscreenshots -size 1100x720 "$dir"
