// check.js drives `trochilus serve` with the client libraries people use, unchanged: OpenAI's
// (npm openai) and Ollama's (npm ollama), both pinned by tools/deps.sh. It prints what each
// call returned as one JSON object; engine/serve's TestClientLibraries compares it with what
// the engine computes. Usage: TROCHILUS_URL=http://127.0.0.1:PORT node tools/clients/check.js
'use strict';
const { OpenAI } = require('openai');
const { Ollama } = require('ollama');

const base = process.env.TROCHILUS_URL;
const messages = [{ role: 'user', content: 'Name three colours.' }];

async function caught(f) {
  try {
    await f();
    return { ok: true };
  } catch (e) {
    return { status: e.status ?? e.status_code, message: e.message, param: e.param ?? null };
  }
}

async function main() {
  const out = {};
  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
  out.models = (await openai.models.list()).data.map((m) => m.id);
  const c = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 12, temperature: 0 });
  out.chat = c.choices[0].message.content;
  out.chatFinish = c.choices[0].finish_reason;
  out.chatUsage = c.usage;
  let s = '';
  const stream = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 12, temperature: 0, stream: true });
  for await (const chunk of stream) s += chunk.choices[0]?.delta?.content ?? '';
  out.chatStream = s;
  const seeded = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 12, temperature: 0.8, seed: 42 });
  out.chatSeeded = seeded.choices[0].message.content;
  const comp = await openai.completions.create({ model: 'tiny', prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
  out.completion = comp.choices[0].text;
  const lp = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 2 });
  out.chatLogprobs = lp.choices[0].logprobs.content.map((t) => t.logprob);
  const resp = await openai.responses.create({ model: 'tiny', input: 'Name three colours.', max_output_tokens: 12, temperature: 0 });
  out.responses = resp.output_text;
  let rs = '';
  for await (const ev of await openai.responses.create({ model: 'tiny', input: 'Name three colours.', max_output_tokens: 12, temperature: 0, stream: true })) {
    if (ev.type === 'response.output_text.delta') rs += ev.delta;
  }
  out.responsesStream = rs;
  out.chatRefused = await caught(() => openai.chat.completions.create({ model: 'tiny', messages, n: 2 }));

  const ollama = new Ollama({ host: base });
  out.tags = (await ollama.list()).models.map((m) => m.name);
  const show = await ollama.show({ model: 'tiny' });
  out.showFamily = show.details.family;
  const oc = await ollama.chat({ model: 'tiny', messages, options: { temperature: 0, num_predict: 12 } });
  out.ollamaChat = oc.message.content;
  out.ollamaEval = oc.eval_count;
  let t = '';
  for await (const part of await ollama.chat({ model: 'tiny', messages, stream: true, options: { temperature: 0, num_predict: 12 } })) {
    t += part.message.content;
  }
  out.ollamaStream = t;
  const os = await ollama.chat({ model: 'tiny', messages, options: { seed: 42, num_predict: 12 } });
  out.ollamaSeeded = os.message.content;
  const og = await ollama.generate({ model: 'tiny', prompt: 'Once upon a time', options: { temperature: 0, num_predict: 8 } });
  out.ollamaGenerate = og.response;
  out.ollamaRefused = await caught(() => ollama.chat({ model: 'tiny', messages, options: { repeat_penalty: 1.1 } }));
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
