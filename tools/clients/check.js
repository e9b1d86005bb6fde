// check.js drives `trochilus serve` with the client libraries people use, unchanged: OpenAI's
// (npm openai, with its zod helpers for structured output and tools), LangChain's
// (@langchain/openai), the Vercel AI SDK's default OpenAI provider (which speaks /v1/responses)
// and Ollama's (npm ollama), pinned by tools/clients/package-lock.json (tools/deps.sh installs it). It prints what each call returned as one JSON object; engine/serve's
// TestClientLibraries compares it with what the engine computes. Usage:
// TROCHILUS_URL=http://127.0.0.1:PORT TROCHILUS_TOOLS_URL=http://… node tools/clients/check.js
// (the second server's model writes tool calls: its template renders tools).
'use strict';
const { OpenAI } = require('openai');
const { Ollama } = require('ollama');
const { zodResponseFormat, zodFunction } = require('openai/helpers/zod');
const { z } = require('zod');
const { ChatOpenAI } = require('@langchain/openai');
const { createOpenAI } = require('@ai-sdk/openai');
const { generateText, streamText, generateObject, tool } = require('ai');

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
  out.chatTopLogprobs = lp.choices[0].logprobs.content.map((t) => t.top_logprobs.map((a) => ({ token: a.token, logprob: a.logprob })));
  const resp = await openai.responses.create({ model: 'tiny', input: 'Name three colours.', max_output_tokens: 12, temperature: 0 });
  out.responses = resp.output_text;
  let rs = '';
  for await (const ev of await openai.responses.create({ model: 'tiny', input: 'Name three colours.', max_output_tokens: 12, temperature: 0, stream: true })) {
    if (ev.type === 'response.output_text.delta') rs += ev.delta;
  }
  out.responsesStream = rs;
  out.chatRefused = await caught(() => openai.chat.completions.create({ model: 'tiny', messages, n: 2 }));
  // Abort: the client gives up on a stream once it has begun (before reading it, so that the
  // test does not depend on how much of the answer arrived; the server holds the answer after
  // its first event, X-Test-Hold, until the client leaves, and the test reads from its log
  // that the answer stopped then); the server answers the next request as ever.
  const ac = new AbortController();
  const long = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 200, temperature: 0, stream: true },
    { signal: ac.signal, headers: { 'X-Test-Hold': 'hold' } });
  ac.abort();
  for await (const chunk of long) void chunk; // the SDK ends an aborted stream quietly
  out.afterAbort = (await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 12, temperature: 0 })).choices[0].message.content;

  // Structured output as the SDK's zod helper asks for it; the schema it sent is reported, so
  // that the test computes the same answer. 256 tokens hold the longest document the schema
  // and the matcher's bounded whitespace allow, one character a token.
  const Person = z.object({ name: z.string().max(6), age: z.number().int(), member: z.boolean() });
  const format = zodResponseFormat(Person, 'person');
  const parsed = await openai.chat.completions.parse({ model: 'tiny', messages: [{ role: 'user', content: 'A person as JSON.' }],
    max_tokens: 256, temperature: 0, response_format: format });
  out.structuredSchema = JSON.stringify(format.json_schema.schema);
  out.structured = parsed.choices[0].message.content;
  out.structuredParsed = parsed.choices[0].message.parsed;

  // LangChain: invoke, stream, withStructuredOutput (a json_schema response_format).
  const lc = new ChatOpenAI({ model: 'tiny', apiKey: 'unused', temperature: 0, maxTokens: 12, maxRetries: 0, configuration: { baseURL: base + '/v1' } });
  out.langchainInvoke = (await lc.invoke(messages)).content;
  let ls = '';
  for await (const chunk of await lc.stream(messages)) ls += chunk.content;
  out.langchainStream = ls;
  const lcLong = new ChatOpenAI({ model: 'tiny', apiKey: 'unused', temperature: 0, maxTokens: 256, maxRetries: 0, configuration: { baseURL: base + '/v1' } });
  out.langchainStructured = await lcLong.withStructuredOutput(Person, { name: 'person' }).invoke([{ role: 'user', content: 'A person as JSON.' }]);

  // The AI SDK's default provider: /v1/responses, text.format json_schema for generateObject.
  const provider = createOpenAI({ baseURL: base + '/v1', apiKey: 'unused' });
  out.aiText = (await generateText({ model: provider('tiny'), messages, maxOutputTokens: 12, temperature: 0 })).text;
  let at = '';
  for await (const piece of streamText({ model: provider('tiny'), messages, maxOutputTokens: 12, temperature: 0 }).textStream) at += piece;
  out.aiStream = at;
  out.aiObject = (await generateObject({ model: provider('tiny'), schema: Person, messages: [{ role: 'user', content: 'A person as JSON.' }],
    maxOutputTokens: 256, temperature: 0 })).object;

  if (process.env.TROCHILUS_TOOLS_URL) {
    const tools = new OpenAI({ baseURL: process.env.TROCHILUS_TOOLS_URL + '/v1', apiKey: 'unused', maxRetries: 0 });
    const weather = zodFunction({ name: 'get_weather', parameters: z.object({ city: z.string().max(12), unit: z.enum(['C', 'F']) }) });
    const ask = [{ role: 'user', content: 'Weather in Paris?' }];
    const call = await tools.chat.completions.parse({ model: 'qwen3', messages: ask, tools: [weather], tool_choice: 'required',
      max_tokens: 300, temperature: 0 });
    const msg = call.choices[0].message;
    out.toolsSent = JSON.stringify([weather]);
    out.toolFinish = call.choices[0].finish_reason;
    out.toolName = msg.tool_calls[0].function.name;
    out.toolArguments = msg.tool_calls[0].function.arguments;
    out.toolParsed = msg.tool_calls[0].function.parsed_arguments;
    // The requests whose answers the test computes from what they sent say which they are
    // (X-Test-Call): the server keeps their bodies.
    const reply = await tools.chat.completions.create({ model: 'qwen3', max_tokens: 8, temperature: 0, tools: [weather],
      messages: [...ask, msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'Sunny, 21 C' }] },
    { headers: { 'X-Test-Call': 'round-trip' } });
    out.toolRoundTrip = reply.choices[0].message.content;
    // parallel_tool_calls false: at most one call, the engine's first.
    const single = await tools.chat.completions.create({ model: 'qwen3', messages: ask, tools: [weather], tool_choice: 'required',
      parallel_tool_calls: false, max_tokens: 300, temperature: 0 }, { headers: { 'X-Test-Call': 'parallel-false' } });
    out.parallelFalseCalls = single.choices[0].message.tool_calls.map((c) => ({ name: c.function.name, args: JSON.parse(c.function.arguments) }));
    // LangChain's bindTools, the call forced.
    const lcTools = new ChatOpenAI({ model: 'qwen3', apiKey: 'unused', temperature: 0, maxTokens: 300, maxRetries: 0,
      configuration: { baseURL: process.env.TROCHILUS_TOOLS_URL + '/v1', defaultHeaders: { 'X-Test-Call': 'langchain-tools' } } });
    const lcWeather = { name: 'get_weather', description: 'The weather in a city.', schema: z.object({ city: z.string().max(12), unit: z.enum(['C', 'F']) }) };
    const m = await lcTools.bindTools([lcWeather], { tool_choice: 'required' }).invoke(ask);
    out.langchainToolCalls = m.tool_calls.map((c) => ({ name: c.name, args: c.args }));
    // The AI SDK's default provider: a forced call over /v1/responses.
    const qwen = createOpenAI({ baseURL: process.env.TROCHILUS_TOOLS_URL + '/v1', apiKey: 'unused', headers: { 'X-Test-Call': 'ai-tools' } });
    const ai = await generateText({ model: qwen('qwen3'), messages: ask, maxOutputTokens: 300, temperature: 0, toolChoice: 'required',
      tools: { get_weather: tool({ description: 'The weather in a city.', inputSchema: z.object({ city: z.string().max(12), unit: z.enum(['C', 'F']) }) }) } });
    out.aiToolCalls = ai.toolCalls.map((c) => ({ name: c.toolName, args: c.input }));
  }

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
