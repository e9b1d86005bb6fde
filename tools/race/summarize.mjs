// summarize.mjs reads the runs race.sh recorded and prints the race table: for each file, thread
// count and measure (pp512, tg128), the medians with min and max of both engines, their ratio,
// the A/A control (the two back-to-back Trochilus runs), and for generation the weight bytes a
// token reads against the measured RAM bandwidth. It writes the same as JSON.
//
// usage: node summarize.mjs RUNS.jsonl TOKENBYTES.jsonl BANDWIDTH.txt OUT.json
import fs from "node:fs";
import path from "node:path";

const [runsFile, bytesFile, bwFile, outFile] = process.argv.slice(2);
if (!outFile) {
    console.error("usage: node summarize.mjs RUNS.jsonl TOKENBYTES.jsonl BANDWIDTH.txt OUT.json");
    process.exit(2);
}
const lines = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => l.trim() !== "");
const runs = lines(runsFile).map((l) => JSON.parse(l));
const bytes = new Map(lines(bytesFile).map((l) => JSON.parse(l)).map((b) => [path.basename(b.file), b]));
// "read 2048 MiB with 2 goroutines: best 31.20 GB/s of 5 rounds"
const bandwidth = {};
for (const l of lines(bwFile)) {
    const m = /with (\d+) goroutines: best ([\d.]+) GB\/s/.exec(l);
    if (m) bandwidth[+m[1]] = +m[2];
}

function stats(xs) {
    const s = [...xs].sort((a, b) => a - b);
    const n = s.length;
    const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    return { median, min: s[0], max: s[n - 1], n, samples: xs };
}
const f2 = (x) => (x == null ? "-" : x.toFixed(2));
const cell = (s) => (s ? `${f2(s.median)} (${f2(s.min)}–${f2(s.max)})` : "-");

const keys = [...new Set(runs.map((r) => `${r.model}\t${r.threads}`))];
const summary = [];
const rows = [];
for (const key of keys) {
    const [model, threads] = key.split("\t");
    // A run during which other work used more than a tenth of a core (race.sh's otherCores)
    // measured the other work too: it is listed and left out.
    const clean = (r) => !(r.otherCores > 0.1);
    for (const r of runs.filter((r) => r.model === model && r.threads === +threads && !clean(r))) {
        console.log(`left out: ${r.engine} rep ${r.rep} (other work used ${r.otherCores} cores)`);
    }
    const of = (engine, role) => runs.filter((r) => r.model === model && r.threads === +threads && r.engine === engine && (role == null || r.role === role) && clean(r));
    const tro = of("trochilus", "race");
    const lla = of("llama.cpp");
    const aa = [...of("trochilus", "aa"), ...tro.filter((r) => r.rep === 1)];
    const b = bytes.get(model);
    for (const [name, field] of [["pp512", "promptRate"], ["tg128", "genRate"]]) {
        const t = tro.length ? stats(tro.map((r) => r[field])) : null;
        const l = lla.length ? stats(lla.map((r) => r[field])) : null;
        const aaRates = aa.map((r) => r[field]);
        const aaSpread = aaRates.length === 2 ? Math.abs(aaRates[0] - aaRates[1]) / Math.min(...aaRates) : null;
        const entry = { model, threads: +threads, measure: name, trochilus: t, llamacpp: l, ratio: t && l ? t.median / l.median : null, aa: aaRates, aaSpread };
        if (name === "tg128" && b) {
            entry.tokenBytes = b.token_bytes;
            entry.bandwidthGBs = bandwidth[+threads] ?? null;
            entry.boundTokS = entry.bandwidthGBs ? (entry.bandwidthGBs * 1e9) / b.token_bytes : null;
            entry.trochilusGBs = t ? (t.median * b.token_bytes) / 1e9 : null;
            entry.llamacppGBs = l ? (l.median * b.token_bytes) / 1e9 : null;
        }
        summary.push(entry);
        rows.push(`| ${model} | ${threads} | ${name} | ${cell(t)} | ${cell(l)} | ${entry.ratio == null ? "-" : entry.ratio.toFixed(2) + "×"} | ${aaRates.map(f2).join(" / ")} (${aaSpread == null ? "-" : (100 * aaSpread).toFixed(1) + "%"}) |`);
    }
}
console.log("| file | threads | measure | Trochilus tok/s median (min–max) | llama.cpp tok/s median (min–max) | Trochilus / llama.cpp | A/A Trochilus (spread) |");
console.log("|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
console.log();
console.log("| file | threads | GB a token | probe GB/s | bound tok/s | Trochilus GB/s | llama.cpp GB/s |");
console.log("|---|---|---|---|---|---|---|");
for (const e of summary.filter((e) => e.tokenBytes)) {
    console.log(`| ${e.model} | ${e.threads} | ${(e.tokenBytes / 1e9).toFixed(3)} | ${f2(e.bandwidthGBs)} | ${f2(e.boundTokS)} | ${f2(e.trochilusGBs)} | ${f2(e.llamacppGBs)} |`);
}
fs.writeFileSync(outFile, JSON.stringify({ bandwidth, summary, runs }, null, 1) + "\n");
console.log(`\nwrote ${outFile}`);
