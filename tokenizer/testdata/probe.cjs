// Probes HF tokenizers (the Rust crate through @anush008/tokenizers) for the Unicode data it
// uses: which code points each regex class matches (Oniguruma), and what its NFC/NFD
// normalizers do. Reads one JSON request per line on stdin, writes one JSON answer per line:
//   {"class": "\\p{L}"}                    -> [[lo, hi], ...] ranges of matching code points
//   {"form": "nfc"|"nfd", "strs": [...]}   -> [normalized strings]
const tk = require('@anush008/tokenizers');

function splitter(re) {
  const j = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: {type: 'Split', pattern: {Regex: re}, behavior: 'Removed', invert: false},
    post_processor: null, decoder: null,
    model: {type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: {}, merges: []},
  };
  return tk.Tokenizer.fromString(JSON.stringify(j)).getPreTokenizer();
}

let all = null;
function everyCodePoint() {
  if (all) return all;
  const parts = [];
  let chunk = [];
  for (let c = 0; c < 0x110000; c++) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    chunk.push(c);
    if (chunk.length === 10000) { parts.push(String.fromCodePoint(...chunk)); chunk = []; }
  }
  parts.push(String.fromCodePoint(...chunk));
  return (all = parts.join(''));
}

function classRanges(re) {
  // Split with behaviour Removed drops every match; what is left are the non-matching runs.
  const left = new Uint8Array(0x110000);
  for (const [s] of splitter(re).preTokenizeString(everyCodePoint())) {
    for (const ch of s) left[ch.codePointAt(0)] = 1;
  }
  const ranges = [];
  let start = -1;
  for (let c = 0; c <= 0x110000; c++) {
    const surrogate = c >= 0xD800 && c <= 0xDFFF;
    const m = c < 0x110000 && !surrogate && !left[c];
    if (surrogate) continue;
    if (m && start < 0) start = c;
    if (!m && start >= 0) { ranges.push([start, c - 1]); start = -1; }
  }
  return ranges;
}

const norm = {nfc: tk.nfcNormalizer(), nfd: tk.nfdNormalizer()};
const lines = require('fs').readFileSync(0, 'utf8').split('\n').filter((l) => l.length > 0);
for (const l of lines) {
  const req = JSON.parse(l);
  if (req.class !== undefined) console.log(JSON.stringify(classRanges(req.class)));
  else console.log(JSON.stringify(req.strs.map((s) => norm[req.form].normalizeString(s))));
}
