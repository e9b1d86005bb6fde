package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/tokenizer"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// runTokenize prints the ids and pieces the model's tokenizer gives for a text.
func runTokenize(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	model := cl.String("m", "", "model GGUF `file` (its tokenizer is used)")
	text := cl.String("p", "", "the `text` to tokenize")
	file := cl.String("f", "", "read the text from `file` instead")
	special := cl.Bool("special", false, "turn special-token text (e.g. <|endoftext|>) into its id")
	idsOnly := cl.Bool("ids", false, "print only the ids, comma-separated")
	if err := cl.parse(); err != nil {
		return err
	}
	if *model == "" {
		return fmt.Errorf("%w: -m is required", errUsage)
	}
	if (*text == "") == (*file == "") {
		return fmt.Errorf("%w: give exactly one of -p and -f", errUsage)
	}
	in, err := textOrFile(*text, *file)
	if err != nil {
		return err
	}
	tok, _, err := openTokenizer(*model)
	if err != nil {
		return err
	}
	ids := tok.Encode(in, *special)
	if *idsOnly {
		buf := make([]byte, 0, 8*len(ids))
		for i, id := range ids {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(id), 10)
		}
		buf = append(buf, '\n')
		_, err := stdout.Write(buf)
		return err
	}
	for _, id := range ids {
		if _, err := fmt.Fprintf(stdout, "%d\t%q\n", id, tok.Decode([]int32{id})); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stderr, "%d tokens\n", len(ids))
	return err
}

// runTemplate renders a conversation with the model's chat template, as transformers'
// apply_chat_template renders it.
func runTemplate(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	model := cl.String("m", "", "model GGUF `file` (its tokenizer.chat_template is used)")
	messages := cl.String("messages", "", "conversation as a JSON `file`: a list of {role, content} objects")
	addGen := cl.Bool("add-generation-prompt", false, "end with the prompt for the assistant's turn")
	if err := cl.parse(); err != nil {
		return err
	}
	if *model == "" || *messages == "" {
		return fmt.Errorf("%w: -m and --messages are required", errUsage)
	}
	msgs, err := os.ReadFile(*messages)
	if err != nil {
		return err
	}
	tok, f, err := openTokenizer(*model)
	if err != nil {
		return err
	}
	tmpl, err := f.Str("tokenizer.chat_template")
	if err != nil {
		return fmt.Errorf("%s: no chat template: %w", *model, err)
	}
	out, err := chat.Render(tmpl, msgs, chat.Options{
		AddGenerationPrompt: *addGen,
		SpecialTokens:       specialTokens(tok),
	})
	if err != nil {
		return fmt.Errorf("%s: chat template: %w", *model, err)
	}
	_, err = io.WriteString(stdout, out)
	return err
}

// openTokenizer reads a GGUF's header and builds its tokenizer. The file is closed before
// returning: the tokenizer and the metadata are copies.
func openTokenizer(path string) (*tokenizer.Tokenizer, *gguf.File, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return tok, f, nil
}

// specialTokens gives the template the special tokens' text, as transformers passes
// special_tokens_map to the template.
func specialTokens(tok *tokenizer.Tokenizer) chat.SpecialTokens {
	text := func(id int32) string {
		if id < 0 || int(id) >= tok.Len() {
			return ""
		}
		return tok.Token(id)
	}
	return chat.SpecialTokens{BOS: text(tok.BOS()), EOS: text(tok.EOS()), PAD: text(tok.PAD()), UNK: text(tok.UNK())}
}
