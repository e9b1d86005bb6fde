// A long-lived tokenizer oracle for the Go tests: Hugging Face tokenizers (the Rust crate,
// through @anush008/tokenizers) and, as a second implementation, @huggingface/tokenizers (pure
// JavaScript). It reads one JSON request per line on stdin and writes one JSON reply per line:
//
//   {"op":"load","name":N,"path":P,"config":C|null,"drop":[...]}  -> {"ok":true}
//       loads tokenizer.json P (and tokenizer_config.json C) under the name N; added tokens
//       whose content is in drop are made unmatchable first (for comparing with
//       split_special_tokens): their content becomes "\uFFFF" + content, which keeps every
//       token's id (removing them would renumber the added tokens after them).
//   {"op":"encode","name":N,"texts":[...],"js":bool}               -> {"rust":[[ids]],"js":[[ids]]|null}
//   {"op":"decode","name":N,"ids":[[...]]}                          -> {"rust":[text]}
//   {"op":"time","name":N,"texts":[...]}                            -> {"seconds":S,"cpu":C,"tokens":K}
//       encodes the texts one after another (one encode call each, awaited), for speed.
//
// Errors are replied as {"error":"..."}.
const fs = require('fs');
const readline = require('readline');
const rust = require('@anush008/tokenizers');

const {Tokenizer: JsTokenizer} = require('@huggingface/tokenizers');

const loaded = new Map();

async function handle(req) {
  switch (req.op) {
    case 'load': {
      const json = JSON.parse(fs.readFileSync(req.path, 'utf8'));
      const drop = new Set(req.drop || []);
      for (const t of json.added_tokens || []) if (drop.has(t.content)) t.content = '\uFFFF' + t.content;
      const cfg = req.config ? JSON.parse(fs.readFileSync(req.config, 'utf8')) : {};
      // The JavaScript tokenizer is slow to build: only when first asked for.
      let js = null;
      const lazyJS = () => (js = js || new JsTokenizer(json, cfg));
      loaded.set(req.name, {rust: rust.Tokenizer.fromString(JSON.stringify(json)), js: lazyJS});
      return {ok: true};
    }
    case 'encode': {
      const t = get(req.name);
      const encs = await t.rust.encodeBatch(req.texts, {addSpecialTokens: false});
      const out = {rust: encs.map((e) => e.getIds()), js: null};
      if (req.js) out.js = req.texts.map((s) => t.js().encode(s, {add_special_tokens: false}).ids);
      return out;
    }
    case 'decode': {
      const t = get(req.name);
      return {rust: await t.rust.decodeBatch(req.ids, false)};
    }
    case 'time': {
      const t = get(req.name);
      let tokens = 0;
      const cpu0 = process.cpuUsage();
      const start = process.hrtime.bigint();
      for (const text of req.texts) {
        tokens += (await t.rust.encode(text, null, {addSpecialTokens: false})).getIds().length;
      }
      const cpu = process.cpuUsage(cpu0);
      return {seconds: Number(process.hrtime.bigint() - start) / 1e9, cpu: (cpu.user + cpu.system) / 1e6, tokens};
    }
  }
  throw new Error('unknown op ' + req.op);
}

function get(name) {
  const t = loaded.get(name);
  if (!t) throw new Error('tokenizer ' + name + ' not loaded');
  return t;
}

(async () => {
  const rl = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  for await (const line of rl) {
    let reply;
    try {
      reply = await handle(JSON.parse(line));
    } catch (e) {
      reply = {error: String(e && e.stack || e)};
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
})();
