// llama_bench.mjs times llama.cpp (the prebuilt CPU libraries of @node-llama-cpp/linux-x64) on one
// GGUF the way tools/race/race.sh times Trochilus: one process, one repetition, no warm-up, so
// the two engines can be run alternately with the same cold-process cost.
//
// usage:
//   node llama_bench.mjs prompt [n=512] [seed=20251129]      print n random ids (< 50000), comma-separated
//   node llama_bench.mjs run MODEL THREADS PROMPT_FILE [n=128] [reps=1]
//
// "run" evaluates the prompt ids as one batch (batch = ubatch = 512, context 1024, flash attention
// off, THREADS threads), picks the first token greedily, then makes n more greedy single-token
// passes, reps times from an empty sequence (reps 2: one warm-up, as race.sh's warm mode runs
// both engines). It prints one line "RESULT {json}" with the wall-clock rates and llama.cpp's own
// timers of the last repetition.
// NLC_DIR names the folder whose node_modules holds node-llama-cpp (default: the current one).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [mode, ...args] = process.argv.slice(2);

// mulberry32: a small seeded generator, so both engines get the same ids from the same seed.
function mulberry32(seed) {
    return function () {
        seed |= 0;
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

function die(msg) {
    console.error(`llama_bench: ${msg}`);
    process.exit(2);
}

if (mode === "prompt") {
    const n = parseInt(args[0] ?? "512", 10);
    const seed = parseInt(args[1] ?? "20251129", 10);
    if (!(n > 0) || !Number.isFinite(seed)) die(`prompt: bad n ${args[0]} or seed ${args[1]}`);
    const rand = mulberry32(seed);
    console.log(Array.from({ length: n }, () => Math.floor(rand() * 50000)).join(","));
    process.exit(0);
}
if (mode !== "run" || args.length < 3) {
    die("usage: llama_bench.mjs prompt [n] [seed] | run MODEL THREADS PROMPT_FILE [n=128]");
}

const [modelPath, threadsArg, promptFile, genArg = "128", repsArg = "1"] = args;
const reps = parseInt(repsArg, 10);
const threads = parseInt(threadsArg, 10);
const nGen = parseInt(genArg, 10);
if (!(threads > 0) || !(nGen > 0) || !(reps > 0)) die(`run: bad threads ${threadsArg}, n ${genArg} or reps ${repsArg}`);
const prompt = fs.readFileSync(promptFile, "utf8").trim().split(",").map((s) => parseInt(s, 10));
if (prompt.length === 0 || prompt.length > 512 || prompt.some((x) => !(x >= 0))) {
    die(`run: ${promptFile}: want 1..512 non-negative ids, got ${prompt.length}`);
}

const nlcDir = path.resolve(process.env.NLC_DIR ?? process.cwd());
const require = createRequire(path.join(nlcDir, "package.json"));
const { getLlama, LlamaLogLevel } = await import(require.resolve("node-llama-cpp"));

// llama.cpp's own decode timers arrive as log lines; keep those and the backend choice.
const perfLines = [];
const backendLines = [];
const logger = (level, message) => {
    const msg = String(message).trimEnd();
    if (/llama_perf_context_print: +(prompt eval|eval) time/.test(msg)) perfLines.push(msg);
    else if (/load_backend|system_info/.test(msg)) backendLines.push(msg);
    else if (level === "error") console.error(`  llama.cpp: ${msg}`);
};

const now = () => Number(process.hrtime.bigint()) / 1e9;
const llama = await getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    maxThreads: 0, // no cap: the context's thread count is used as given
    logLevel: LlamaLogLevel.debug,
    logger,
});
const t0 = now();
const model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: true });
const loadSeconds = now() - t0;
const context = await model.createContext({
    contextSize: 1024,
    batchSize: 512,
    sequences: 1,
    threads: { ideal: threads, min: threads },
    flashAttention: false, // node-llama-cpp's default is on; Trochilus has no flash attention
    performanceTracking: true,
});
const seq = context.getSequence();

// one() evaluates the prompt as one batch from an empty sequence, then nGen greedy passes; it
// returns the wall-clock seconds of both parts.
async function one() {
    await seq.clearHistory();
    perfLines.length = 0;
    const tp = now();
    const gen = seq.evaluate(prompt, { temperature: 0, yieldEogToken: true });
    await gen.next(); // the whole prompt as one batch, then one greedy choice
    const promptSeconds = now() - tp;
    await context.printTimings(); // group 1: the prompt
    const tg = now();
    for (let i = 0; i < nGen; i++) await gen.next();
    const genSeconds = now() - tg;
    await gen.return();
    await context.printTimings(); // group 2: the single-token passes
    await new Promise((r) => setTimeout(r, 200)); // let the queued native log lines arrive
    return { promptSeconds, genSeconds };
}
let run;
for (let r = 0; r < reps; r++) run = await one(); // the last repetition is reported
const { promptSeconds, genSeconds } = run;

const result = {
    engine: "llama.cpp",
    release: llama.llamaCppRelease?.release ?? null,
    model: path.basename(modelPath),
    threads: context.currentThreads,
    flashAttention: context.flashAttention,
    loadSeconds,
    promptTokens: prompt.length,
    promptRate: prompt.length / promptSeconds,
    genTokens: nGen,
    genRate: nGen / genSeconds,
    reps,
    backend: backendLines.filter((l) => /load_backend/.test(l)).join(" | "),
};
// llama.cpp counts the prompt group's tokens and the generation group's runs itself.
const pm = perfLines.length >= 1 ? /prompt eval time = +([\d.]+) ms \/ +(\d+) tokens/.exec(perfLines[0]) : null;
const em = perfLines.length >= 4 ? /eval time = +([\d.]+) ms \/ +(\d+) runs/.exec(perfLines[3]) : null;
if (pm) result.internalPromptRate = (+pm[2] * 1000) / +pm[1];
if (em) result.internalGenRate = (+em[2] * 1000) / +em[1];
console.log("RESULT " + JSON.stringify(result));

await context.dispose();
await model.dispose();
await llama.dispose();
