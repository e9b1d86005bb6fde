// Package assets holds the app's icon: icon.png (512×512), which the programs embed, and
// icon.ico (256 down to 16 pixels, made from it), which the Windows packages carry as a
// resource (packaging/package.sh).
package assets

import _ "embed"

//go:embed icon.png
var icon []byte

// IconPNG returns the app icon, a 512×512 PNG. The slice is shared: do not modify it.
func IconPNG() []byte { return icon }
