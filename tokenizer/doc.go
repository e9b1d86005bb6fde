// Package tokenizer turns text into token ids and back exactly as Hugging Face tokenizers does, from the tokenizer metadata in a GGUF file.
package tokenizer
