// Loads GGUF files with llama.cpp (the prebuilt library inside @node-llama-cpp/linux-x64, through
// its N-API addon) and prints, per file, one JSON line of what llama.cpp made of it. A file
// llama.cpp refuses (a missing or misshapen tensor, a missing key) prints {"loaded": false}.
//
// Usage: node llama_load.cjs ADDON_DIR FILE...
"use strict";
const path = require("path");
const [rawDir, ...files] = process.argv.slice(2);
const dir = path.resolve(rawDir);
const addon = require(path.join(dir, "llama-addon.node"));
const errors = [];
addon.setLogger((level, msg) => { if (level <= 2) errors.push(msg.trim()); });
addon.setLoggerLogLevel(2);

(async () => {
  addon.loadBackends();
  addon.loadBackends(dir);
  await addon.init();
  for (const file of files) {
    errors.length = 0;
    // checkTensors makes llama.cpp validate every tensor's data (no NaN or infinity in floats
    // and scales) as it loads.
    const m = new addon.AddonModel(file, { addonExports: addon, gpuLayers: 0, useMmap: true, checkTensors: true });
    const loaded = await m.init();
    // The logger's messages arrive asynchronously: wait (2 s at most) for the refusal's last line.
    for (let i = 0; !loaded && i < 200 && !errors.some((e) => e.includes("failed to load model")); i++)
      await new Promise((r) => setTimeout(r, 10));
    const out = { file, loaded, errors: errors.slice() };
    if (loaded) {
      Object.assign(out, {
        description: m.getModelDescription(),
        parameters: m.getTotalParameters(),
        bytes: m.getModelSize(),
        context: m.getTrainContextSize(),
        embedding: m.getEmbeddingVectorSize(),
        bos: m.tokenBos(),
        eos: m.tokenEos(),
        tokens: Array.from(m.tokenize("Hello world, about   spaces.", false)),
      });
      await m.dispose();
    }
    console.log(JSON.stringify(out));
  }
  await addon.dispose();
})().catch((e) => { console.error(e); process.exit(1); });
