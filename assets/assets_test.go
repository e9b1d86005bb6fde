package assets

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"strings"
	"testing"
)

func TestIconIsASquarePNG(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(IconPNG()))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 512 || b.Dy() != 512 {
		t.Fatalf("icon is %v, want 512×512", b)
	}
}

// The Windows icon holds PNG images of 256, 64, 48, 32 and 16 pixels, each where its directory
// entry says.
func TestWindowsIcon(t *testing.T) {
	data, err := os.ReadFile("icon.ico")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 6 || binary.LittleEndian.Uint16(data[2:]) != 1 {
		t.Fatal("icon.ico is not an icon file")
	}
	n := int(binary.LittleEndian.Uint16(data[4:]))
	want := []int{256, 64, 48, 32, 16}
	if n != len(want) {
		t.Fatalf("%d images, want %d", n, len(want))
	}
	for i := range n {
		e := data[6+16*i:]
		size := int(e[0])
		if size == 0 {
			size = 256
		}
		length, off := binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
		if uint64(off)+uint64(length) > uint64(len(data)) {
			t.Fatalf("image %d past the end of the file", i)
		}
		img, err := png.Decode(bytes.NewReader(data[off : off+length]))
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		if b := img.Bounds(); size != want[i] || b.Dx() != size || b.Dy() != size {
			t.Fatalf("image %d: entry says %d, PNG is %v, want %d", i, size, b, want[i])
		}
	}
}

// The embedded OLMoE tokenizer is the file olmoe/README.md describes, byte for byte, and its
// config carries a chat template.
func TestOLMoETokenizer(t *testing.T) {
	js, cfg, err := OLMoETokenizer()
	if err != nil {
		t.Fatal(err)
	}
	const wantSize, wantSum = 2115113, "9ad33b4b39a9f83973c3f8c42a01948dd5b877a28ac9a5356956c4ff4ed0b714"
	if sum := fmt.Sprintf("%x", sha256.Sum256(js)); len(js) != wantSize || sum != wantSum {
		t.Fatalf("tokenizer.json: %d bytes, sha256 %s; want %d, %s", len(js), sum, wantSize, wantSum)
	}
	var c struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.ChatTemplate, "<|assistant|>") {
		t.Fatalf("tokenizer_config.json's chat template lacks <|assistant|>: %q", c.ChatTemplate)
	}
	readme, err := os.ReadFile("olmoe/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte(wantSum)) {
		t.Fatal("olmoe/README.md does not give the sha256 this test checks")
	}
	js[0] = 'x' // a fresh copy: the next call is unchanged
	if again, _, _ := OLMoETokenizer(); again[0] != '{' {
		t.Fatal("OLMoETokenizer returned shared bytes")
	}
}
