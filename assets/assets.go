// Package assets holds what the programs carry inside them: the app's icon (icon.png, 512×512,
// which the programs embed, and icon.ico, 256 down to 16 pixels, made from it, which the Windows
// packages carry as a resource, see packaging/package.sh) and the OLMoE tokenizer (olmoe/, see
// its README), so that test models get a real tokenizer and chat template without a source tree.
package assets

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
)

//go:embed icon.png
var icon []byte

// IconPNG returns the app icon, a 512×512 PNG. The slice is shared: do not modify it.
func IconPNG() []byte { return icon }

//go:embed olmoe/tokenizer.json.gz
var olmoeTokenizerGz []byte

//go:embed olmoe/tokenizer_config.json
var olmoeTokenizerConfig []byte

// OLMoETokenizer returns OLMoE-1B-7B's tokenizer.json and tokenizer_config.json (which carries
// the chat template), fresh copies the caller may keep or modify.
func OLMoETokenizer() (tokenizerJSON, tokenizerConfig []byte, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(olmoeTokenizerGz))
	if err != nil {
		return nil, nil, fmt.Errorf("assets: OLMoE tokenizer: %w", err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		return nil, nil, fmt.Errorf("assets: OLMoE tokenizer: %w", err)
	}
	return js, bytes.Clone(olmoeTokenizerConfig), nil
}
