#!/usr/bin/env node
// A GPT trained by tiny_gpt, exported with `tiny_gpt export --format gguf`
// (llama.cpp's architecture gpt2), run by llama.cpp (the npm package
// node-llama-cpp). Four models, all with GPT-2's tanh GELU (train
// --gelu tanh), the one llama.cpp's gpt2 computes: a text's bytes with
// biases; a tapegrad BPE tokenizer without biases (exported as zeros);
// GPT-2's tiktoken ranks (when the npm tiktoken package, which carries
// them, is there too); the built-in corpus's bytes (id 2 is ".", which
// ends every sentence). For each:
//   - every id llama.cpp ends a text at is one where tiny_gpt sample ends
//     (its tokenizer's BOS or EOS; none for a text's bytes);
//   - scripts/gguf-sample.js's greedy text (the command docs/formats.md
//     gives) equals `tiny_gpt sample --temperature 0`'s: whole for the
//     corpus model, whose text goes on past "." (id 2, where llama.cpp
//     stopped when the file had llama.cpp's "llama" model, EOS 2 by
//     default), for at least 150 bytes for the others (near-ties);
// and for the first three:
//   - llama.cpp's ids of a varied text (English, code, whitespace runs,
//     several scripts, emoji) and of unseen English equal tapegrad's (the
//     text alone: a GPT reads no BOS and no space in front);
//   - llama.cpp's mean nll per token of the unseen text (the first
//     block_size ids, position i predicting id i + 1) equals `tiny_gpt eval
//     --text`'s within NLL_TOL relative (f32: what ggml's GELU, a table of
//     halves, costs; docs/formats.md gives the measured figures);
//   - the q8_0 export's nll is within 0.5% of the f32 export's.
//   node tests/gguf_gpt.js path/to/tiny_gpt SOURCE_DIR
// The package is looked for in $TAPEGRAD_NODE_MODULES when it is set,
// otherwise in SOURCE_DIR/bench/node_modules (scripts/reference-tools.sh
// installs it there). Without it the test is skipped (exit 77), or fails
// (exit 1) when the environment has CI=true.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { pathToFileURL } = require('url');
const util = require('./node_util.js');

const NLL_TOL = 1e-5;   // f32 export vs eval --text, relative: ggml's GELU table alone costs up to 7.6e-6
                        // (measured 8e-9 to 1.3e-6 here; docs/formats.md)

const [bin, src] = process.argv.slice(2);
if (!bin || !src) {
  console.error('usage: node tests/gguf_gpt.js TINY_GPT SOURCE_DIR');
  process.exit(2);
}
const modules = util.requirePackages('gguf_gpt', src, ['node-llama-cpp']);
const pkg = path.join(modules, 'node-llama-cpp');

let passed = 0, failed = 0;
function ok(msg) { passed++; console.log(`ok ${msg}`); }
function bad(msg) { failed++; console.log(`FAIL ${msg}`); }
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg_gguf_gpt_'));
const env = { ...process.env, OPENBLAS_NUM_THREADS: '1' };
function run(args, input) {
  try {
    return execFileSync(bin, args, { env, input, maxBuffer: 1 << 26, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`tiny_gpt ${args.join(' ')}: ${e.stderr ? e.stderr.toString().trim() : e.message}`);
  }
}

// ---- the texts: the repository's docs (the same on every machine), a varied text
const english = util.docsText(src);
const varied = util.VARIED;
// the training text holds the varied text, so that a byte vocabulary has each of its bytes
const trainText = english.slice(0, 150000) + varied.repeat(10);
const unseen = util.unseenText(english, trainText);
fs.writeFileSync(path.join(work, 'train.txt'), trainText);
fs.writeFileSync(path.join(work, 'unseen.txt'), unseen);

// ---- tapegrad's side
const common = ['--n-layer', '2', '--n-head', '4', '--n-embd', '64', '--block-size', '256', '--gelu', 'tanh',
                '--batch-size', '8', '--lr', '1e-2', '--min-lr', '1e-3', '--warmup', '20', '--eval-iters', '2',
                '--eval-interval', '1000', '--threads', '1'];
const data = ['--data', path.join(work, 'train.txt')];
const tok = path.join(work, 'tok.safetensors');
fs.writeFileSync(path.join(work, 'tok_train.txt'), trainText.slice(0, 100000) + varied.repeat(20));
run(['tokenizer', 'train', '--data', path.join(work, 'tok_train.txt'), '--vocab-size', '700', '--out', tok]);
const models = [
  { name: `bytes (the text's ${new Set(Buffer.from(trainText, 'utf8')).size} bytes), biases`, dir: 'bytes',
    flags: [...data, '--bias', 'true', '--steps', '150'], prompt: 'The ', tokens: 200, stops: [] },
  { name: 'BPE (700 ids), no biases (zeros in the file)', dir: 'bpe', tok, flags: [...data, '--tokenizer', tok, '--steps', '120'],
    prompt: 'The ', tokens: 150, stops: [1, 2] },
  // the built-in corpus (no --data, the default block size 64): the model of the README's demo, smaller,
  // sampled with the command docs/formats.md gives for it (--prompt "the " --tokens 60)
  { name: 'the built-in corpus\'s bytes', dir: 'corpus', corpus: true, prompt: 'the ', tokens: 60, stops: [],
    flags: ['--n-layer', '1', '--n-embd', '32', '--block-size', '64', '--corpus-chars', '20000', '--steps', '200'] },
];
const ranks = path.join(work, 'gpt2.tiktoken');
if (fs.existsSync(path.join(modules, 'tiktoken', 'package.json'))) {
  execFileSync(process.execPath, [path.join(src, 'scripts', 'gpt2-tiktoken.js'), modules, ranks], { stdio: 'ignore' });
  // GPT-2's 50257 ids make the head the cost: one small layer, a short run
  models.push({ name: 'GPT-2\'s tiktoken ranks (50257 ids), biases', dir: 'gpt2', tok: ranks, prompt: 'The ',
                tokens: 100, stops: [50256],
                flags: [...data, '--tokenizer', ranks, '--bias', 'true', '--n-layer', '1', '--n-embd', '32',
                        '--block-size', '128', '--batch-size', '4', '--steps', '15'] });
} else {
  (process.env.CI === 'true' ? bad : (m) => console.log(`skipped ${m}`))('the GPT-2 tiktoken model: no npm tiktoken package (its ranks)');
}
for (const m of models) {
  m.ckpt = path.join(work, m.dir, 'last.safetensors');
  run(['train', ...common, ...m.flags, '--out', path.join(work, m.dir)]);
  for (const type of ['f32', 'q8_0'])
    run(['export', '--ckpt', m.ckpt, '--format', 'gguf', '--type', type, '--out', path.join(work, `${m.dir}.${type}.gguf`)]);
}

// tapegrad's ids of a text as sample encodes a GPT's prompt: the text alone
const byteIds = new Map([...new Set(Buffer.from(trainText, 'utf8'))].sort((a, b) => a - b).map((b, i) => [b, i]));
function tapegradIds(m, text) {
  if (m.dir === 'bytes') return [...Buffer.from(text, 'utf8')].map((b) => byteIds.get(b));
  const out = run(['tokenizer', 'encode', '--tokenizer', m.tok], Buffer.from(text, 'utf8')).toString().trim();
  return out.split(/\s+/).map(Number);
}

// the ids llama.cpp gives for tapegrad's (util.pieceSpeller: a piece that is a character's first bytes)
const spell = util.pieceSpeller(util.decodePieces(run, tok));
function asLlamaCpp(m, ids) { return m.dir === 'bpe' ? spell(ids) : [ids, 0]; }

(async () => {
  const { getLlama } = await import(pathToFileURL(path.join(pkg, 'dist', 'index.js')).href);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  console.log(`node-llama-cpp ${require(path.join(pkg, 'package.json')).version}`);
  for (const m of models) {
    const nll = {};
    for (const type of ['f32', 'q8_0']) {
      const file = path.join(work, `${m.dir}.${type}.gguf`);
      const model = await llama.loadModel({ modelPath: file });
      const ctxSize = model.trainContextSize;
      const label = `${m.name}, ${type}`;
      if (type === 'f32') {
        // where llama.cpp ends a text: only where sample does
        const V = model.fileInfo.metadata.gpt2.vocab_size, eog = [];
        for (let id = 0; id < V; id++) if (model.isEogToken(id)) eog.push(id);
        const extra = eog.filter((id) => !m.stops.includes(id));
        if (!extra.length && V > 2)
          ok(`${label}: llama.cpp ends a text at ${eog.length ? `id ${eog}` : 'no id'} of ${V}, tiny_gpt sample at ` +
             `${m.stops.length ? `id ${m.stops}` : 'none'}`);
        else bad(`${label}: llama.cpp ends a text at id ${extra} of ${V}, where tiny_gpt sample goes on ` +
                 `(${m.stops.length ? `it stops at ${m.stops}` : 'it stops at none'})`);
        // the greedy text of the command docs/formats.md gives, against sample's
        const ours = run(['sample', '--ckpt', m.ckpt, '--prompt', m.prompt, '--tokens', String(m.tokens),
                          '--temperature', '0']);
        const theirs = execFileSync(process.execPath, [path.join(src, 'scripts', 'gguf-sample.js'), file, '--prompt',
                                                       m.prompt, '--tokens', String(m.tokens)], { env });
        let same = 0;
        while (same < ours.length && same < theirs.length && ours[same] === theirs[same]) same++;
        const made = ours.length - Buffer.byteLength(m.prompt) - 1, agreed = Math.min(same, ours.length - 1) -
          Buffer.byteLength(m.prompt);
        // the corpus model's text must go on past its id 2 ('.') and agree whole; the others' at least 150
        // bytes (near-ties in an undertrained model), or whole when shorter
        const text = ours.subarray(Buffer.byteLength(m.prompt), ours.length - 1);
        const id2 = m.corpus ? text.filter((b) => b === 0x2e).length : 0;
        const whole = same === ours.length && ours.length === theirs.length;
        if (m.corpus ? whole && id2 >= 1 && text.indexOf(0x2e) < text.length - 1 : whole || agreed >= 150)
          ok(`${label}: scripts/gguf-sample.js's greedy text equals tiny_gpt sample's ` +
             (m.corpus ? `(all ${made} bytes, ${id2} of them id 2, '.')` : `for ${agreed} of its ${made} bytes`) +
             `: ${JSON.stringify(ours.toString().slice(0, 60))}...`);
        else bad(`${label}: greedy texts agree for ${agreed} of ${made} bytes${m.corpus ? ` (${id2} id 2)` : ''}: ` +
                 `tiny_gpt ${JSON.stringify(ours.toString().slice(0, 200))} llama.cpp ` +
                 `${JSON.stringify(theirs.toString().slice(0, 200))}`);
      }
      if (m.corpus) {
        await model.dispose();
        continue;
      }
      const context = await model.createContext({ contextSize: ctxSize, sequences: 1, threads: 1 });
      const seq = context.getSequence();
      if (type === 'f32') {
        for (const [what, text] of [['varied text', varied], ['unseen English', unseen]]) {
          const ours = tapegradIds(m, text);
          const [want, prefixes] = asLlamaCpp(m, ours);
          const got = model.tokenize(text);
          const i = util.firstDiff(want, got);
          if (i < 0 && (what !== 'unseen English' || !prefixes))
            ok(`${label}: llama.cpp's ids of the ${what} equal tapegrad's (${got.length} ids` +
               (prefixes ? `; ${prefixes} pieces that are a character's first bytes spelled as their bytes, as ` +
                           `docs/formats.md says)` : ')'));
          else bad(`${label}: ids of the ${what} differ at ${i}: tapegrad ${ours.slice(i, i + 6)} (as llama.cpp ` +
                   `would give them: ${want.slice(i, i + 6)}), llama.cpp ${got.slice(i, i + 6)}`);
        }
      }
      // the mean nll of the unseen text's first block_size ids
      const ids = tapegradIds(m, unseen).slice(0, ctxSize);
      const input = ids.map((t, i) => (i < ids.length - 1 ? [t, { generateNext: { probabilities: true,
        options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } }] : t));
      const out = await seq.controlledEvaluate(input);
      let sum = 0;
      for (let i = 0; i + 1 < ids.length; i++) sum -= Math.log(out[i].next.probabilities.get(ids[i + 1]));
      nll[type] = sum / (ids.length - 1);
      if (type === 'f32') {
        const line = run(['eval', '--ckpt', m.ckpt, '--text', path.join(work, 'unseen.txt')]).toString();
        const mt = /^nll ([0-9.]+) nats per token over ([0-9]+) predictions \(perplexity [0-9.]+\)\n$/.exec(line);
        const rel = mt ? Math.abs(nll.f32 - Number(mt[1])) / Number(mt[1]) : NaN;
        if (mt && Number(mt[2]) === ids.length - 1 && rel <= NLL_TOL)
          ok(`${label}: mean nll ${nll.f32.toFixed(6)} over ${ids.length - 1} predictions, tiny_gpt eval --text ` +
             `${mt[1]}: relative difference ${rel.toExponential(2)} (at most ${NLL_TOL})`);
        else bad(`${label}: mean nll ${nll.f32} over ${ids.length - 1} predictions, tiny_gpt eval --text: ` +
                 `${JSON.stringify(line)} (relative difference ${rel})`);
      } else {
        const rel = Math.abs(nll[type] - nll.f32) / nll.f32;
        if (rel <= 5e-3) ok(`${label}: mean nll ${nll[type].toFixed(6)}, ${(100 * rel).toFixed(4)}% from f32's (at most 0.5%)`);
        else bad(`${label}: mean nll ${nll[type]} is ${(100 * rel).toFixed(4)}% from f32's ${nll.f32}`);
      }
      await context.dispose();
      await model.dispose();
    }
  }
  await llama.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.log(`FAIL ${e.message || e}`);
  fs.rmSync(work, { recursive: true, force: true });
  process.exit(1);
});
