// Load a GGUF file in real llama.cpp (through the node-llama-cpp prebuilt
// CPU binaries) and print what it makes of it, so that tests/engine/test-llamacpp.sh
// can compare llama.cpp with elmchat on the same file.
//
// usage: node llamacpp-check.mjs MODEL.gguf [OPTION]...
//        node llamacpp-check.mjs --probe     (exit 0 if llama.cpp loads, 77 if not)
//   --tokenize TEXT      print "tokens ID..." (no BOS), may repeat
//   --tokens IDS         prompt ids (commas or spaces) for the options below
//   --generate N         greedy ids after the prompt: "generate ID..."
//                        (argmax of the raw logits, ties to the lowest id)
//   --logits FILE        last prompt position's logits as raw LE float32
//   --compare FILE       compare those logits with FILE (raw LE float32, as
//                        `elmchat logits` writes): "logits-diff MAXDIFF
//                        MAXABS TOP1 TOP1-OF-FILE"
//   --bench PP,TG        time one PP-token batch and TG one-token decodes
//   --threads N          compute threads (default 2)
// For --tokens the KV cache is F32 and flash attention off: llama.cpp's CPU
// flash attention rounds to f16 (logits then differ by ~5e-4 relative), while
// the plain path agrees with elmchat's f32 engine to float rounding.
// It always prints "arch NAME", "vocab N", "bos ID", "eos ID" first.
// Set NODE_LLAMA_CPP_DIR to the node-llama-cpp package folder when it is not
// resolvable from this file (the test installs it under the build tree).
import {readFileSync, writeFileSync} from "node:fs";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

function usage(msg) {
    process.stderr.write(`llamacpp-check: ${msg}\n`);
    process.exit(2);
}

function parseIds(s) {
    const ids = s.split(/[\s,]+/).filter(x => x !== "").map(Number);
    if (ids.length === 0 || ids.some(x => !Number.isInteger(x) || x < 0))
        usage(`bad token list '${s}'`);
    return ids;
}

const argv = process.argv.slice(2);
if (argv.length < 1)
    usage("usage: node llamacpp-check.mjs MODEL.gguf [OPTION]...");
const modelPath = argv[0];
const texts = [];
let prompt = null, nGen = 0, logitsOut = null, compareWith = null, bench = null, threads = 2;
for (let i = 1; i < argv.length; i++) {
    const opt = argv[i], val = argv[i + 1];
    if (val === undefined)
        usage(`option ${opt} needs a value`);
    i++;
    if (opt === "--tokenize") texts.push(val);
    else if (opt === "--tokens") prompt = parseIds(val);
    else if (opt === "--generate") nGen = Number(val);
    else if (opt === "--logits") logitsOut = val;
    else if (opt === "--compare") compareWith = val;
    else if (opt === "--bench") bench = val.split(",").map(Number);
    else if (opt === "--threads") threads = Number(val);
    else usage(`unknown option ${opt}`);
}
if ((nGen > 0 || logitsOut || compareWith) && !prompt)
    usage("--generate, --logits and --compare need --tokens");

const dir = process.env.NODE_LLAMA_CPP_DIR;
const lc = await import(dir ? pathToFileURL(join(dir, "dist", "index.js")).href
                            : "node-llama-cpp");

// Keep llama.cpp's own log lines for the error message: they say why a file
// was rejected (key, type or shape), which the thrown error does not.
const logs = [];
// Never build or download at run time: only the prebuilt CPU binaries.
let llama;
try {
    llama = await lc.getLlama({
        gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
        progressLogs: false, maxThreads: threads, logLevel: lc.LlamaLogLevel.warn,
        logger: (level, message) => logs.push(`${level}: ${message}`),
    });
} catch (e) {
    process.stdout.write(`no usable prebuilt llama.cpp: ${e.message}\n`);
    process.exit(77);
}
if (modelPath === "--probe") {
    process.stdout.write("llama.cpp ok\n");
    await llama.dispose();
    process.exit(0);
}

let model;
try {
    model = await llama.loadModel({modelPath, gpuLayers: 0});
} catch (e) {
    process.stdout.write(`load-error ${e.message}\n`);
    for (const l of logs.slice(-15))
        process.stdout.write(`# ${l.trimEnd()}\n`);
    process.exit(1);
}
const vocab = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
process.stdout.write(`arch ${model.fileInfo.metadata.general.architecture}\n`);
process.stdout.write(`vocab ${vocab}\n`);
process.stdout.write(`bos ${model.tokens.bos}\neos ${model.tokens.eos}\n`);
for (const t of texts)
    process.stdout.write(`tokens ${model.tokenize(t).join(" ")}\n`);

// The Map from node-llama-cpp is sorted by logit; rebuild the id order.
function toArray(map) {
    const out = new Float32Array(vocab);
    for (const [id, v] of map)
        out[id] = v;
    return out;
}
function argmax(row) {
    let best = 0;
    for (let i = 1; i < row.length; i++)
        if (row[i] > row[best])
            best = i;
    return best;
}
// temperature 0 makes node-llama-cpp's sampler chain plain greedy, so the
// logits it returns are llama.cpp's raw ones.
const wantLogits = {generateNext: {logits: true, options: {temperature: 0}}};

if (prompt) {
    const ctx = await model.createContext({
        contextSize: Math.max(256, prompt.length + nGen + 8),
        batchSize: Math.max(prompt.length, 1), sequences: 1, threads,
        flashAttention: false,
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
    const seq = ctx.getSequence();
    const items = prompt.map((t, i) => i === prompt.length - 1 ? [t, wantLogits] : t);
    let out = await seq.controlledEvaluate(items);
    let row = toArray(out[prompt.length - 1].next.logits);
    if (logitsOut)
        writeFileSync(logitsOut, Buffer.from(row.buffer));
    if (compareWith) {
        const buf = readFileSync(compareWith);
        if (buf.length !== row.length * 4)
            usage(`${compareWith}: ${buf.length} bytes, not ${row.length} float32`);
        const ref = new Float32Array(buf.buffer, buf.byteOffset, row.length);
        let maxDiff = 0, maxAbs = 0;
        for (let i = 0; i < row.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(row[i] - ref[i]));
            maxAbs = Math.max(maxAbs, Math.abs(ref[i]));
        }
        process.stdout.write(`logits-diff ${maxDiff.toExponential(3)} ${maxAbs.toFixed(4)} ` +
                             `${argmax(row)} ${argmax(ref)}\n`);
    }
    const gen = [];
    for (let k = 0; k < nGen; k++) {
        const next = argmax(row);
        gen.push(next);
        if (k + 1 === nGen)
            break;
        out = await seq.controlledEvaluate([[next, wantLogits]]);
        row = toArray(out[0].next.logits);
    }
    if (nGen > 0)
        process.stdout.write(`generate ${gen.join(" ")}\n`);
    await ctx.dispose();
}

if (bench) {
    // As llama-bench: ppN is one batch of N tokens into an empty cache; tgN
    // is N single-token decodes from an empty cache.  One warm-up, best of 3.
    const [pp, tg] = bench;
    const ctx = await model.createContext({
        contextSize: Math.max(pp, tg) + 64, batchSize: Math.max(pp, 1),
        sequences: 1, threads: {ideal: threads, min: threads}, flashAttention: "auto"});
    const seq = ctx.getSequence();
    const ids = n => Array.from({length: n}, (_, i) => 100 + (i * 7919) % (vocab - 200));
    async function timePP() {
        await seq.clearHistory();
        const t0 = process.hrtime.bigint();
        await seq.evaluateWithoutGeneratingNewTokens(ids(pp));
        return Number(process.hrtime.bigint() - t0) / 1e9;
    }
    async function timeTG() {
        await seq.clearHistory();
        const toks = ids(tg);
        const t0 = process.hrtime.bigint();
        for (const t of toks)
            await seq.evaluateWithoutGeneratingNewTokens([t]);
        return Number(process.hrtime.bigint() - t0) / 1e9;
    }
    for (const [name, n, fn] of [[`pp${pp}`, pp, timePP], [`tg${tg}`, tg, timeTG]]) {
        if (n <= 0)
            continue;
        await fn();
        const times = [];
        for (let r = 0; r < 3; r++)
            times.push(await fn());
        const best = Math.min(...times);
        const mean = times.reduce((a, b) => a + b) / times.length;
        process.stdout.write(`${name} ${(n / best).toFixed(1)} tok/s (mean ${(n / mean).toFixed(1)})\n`);
    }
    await ctx.dispose();
}
await model.dispose();
await llama.dispose();
