#!/usr/bin/env node
// A Llama trained by tiny_gpt, exported with `tiny_gpt export --format
// gguf`, run by llama.cpp (the npm package node-llama-cpp: llama.cpp's
// library and a JavaScript API over it). Two models: llama2.c's byte
// vocabulary with a tied head and RoPE on interleaved pairs, and a
// tapegrad BPE tokenizer with an untied head, grouped-query attention and
// RoPE by halves (whose q and k rows the export reorders). For each:
//   - llama.cpp's ids of a varied text (English, source code, whitespace
//     runs, several scripts, emoji, combining marks) equal tapegrad's
//     (BOS, then " " + the text, as sample encodes a prompt);
//   - llama.cpp's greedy continuation of a prompt (scripts/gguf-sample.js,
//     the command docs/formats.md gives) equals `tiny_gpt sample
//     --temperature 0`'s for at least 150 bytes (f32 export);
//   - llama.cpp's mean nll per token of an unseen text (the first
//     block_size ids, position i predicting id i + 1) equals `tiny_gpt
//     eval --text`'s within 1e-4 relative (f32), and the f16 and q8_0
//     exports' within 0.5% of the f32 export's;
//   - the f16 and q8_0 exports' tensors are, byte for byte, gguf-py's
//     conversion of the f32 export's (tests/gguf_quants.py);
//   - each export imported back (`tiny_gpt import --format gguf`) encodes
//     'First Citizen:', the varied text and unseen English to llama.cpp's
//     ids of the same file.
//   node tests/gguf_llama.js path/to/tiny_gpt SOURCE_DIR
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

const [bin, src] = process.argv.slice(2);
if (!bin || !src) {
  console.error('usage: node tests/gguf_llama.js TINY_GPT SOURCE_DIR');
  process.exit(2);
}
const modules = util.requirePackages('gguf_llama', src, ['node-llama-cpp']);
const pkg = path.join(modules, 'node-llama-cpp');

let passed = 0, failed = 0;
function ok(msg) { passed++; console.log(`ok ${msg}`); }
function bad(msg) { failed++; console.log(`FAIL ${msg}`); }
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg_gguf_'));
const env = { ...process.env, OPENBLAS_NUM_THREADS: '1' };
function run(args, input) {
  try {
    return execFileSync(bin, args, { env, input, maxBuffer: 1 << 26, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`tiny_gpt ${args.join(' ')}: ${e.stderr ? e.stderr.toString().trim() : e.message}`);
  }
}

// ---- the texts: the repository's docs (util.docsText), a varied text
let english = util.docsText(src);
// one document (a Llama's BPE text starts a document after a blank line,
// where sample then stops): blank lines made single newlines
english = english.replace(/\n\n+/g, '\n');
const trainText = english.slice(0, 200000);
const unseen = util.unseenText(english, trainText);
const varied = util.VARIED;
fs.writeFileSync(path.join(work, 'train.txt'), trainText);
fs.writeFileSync(path.join(work, 'unseen.txt'), unseen);

// ---- tapegrad's side: two models
const common = ['--arch', 'llama', '--n-layer', '2', '--n-embd', '64', '--hidden-dim', '160', '--block-size', '256',
                '--batch-size', '8', '--lr', '1e-2', '--min-lr', '1e-3', '--warmup', '20', '--eval-iters', '2',
                '--eval-interval', '300', '--threads', '1', '--data', path.join(work, 'train.txt')];
const tok = path.join(work, 'tok.safetensors');
// the tokenizer learns from the English and the varied text, so that its pieces hold other scripts too
fs.writeFileSync(path.join(work, 'tok_train.txt'), trainText.slice(0, 100000) + varied.repeat(20));
run(['tokenizer', 'train', '--data', path.join(work, 'tok_train.txt'), '--vocab-size', '700', '--out', tok]);
const models = [
  { name: 'bytes (llama2.c vocabulary), tied, interleaved RoPE, MHA', dir: 'bytes',
    flags: ['--n-head', '4', '--steps', '600'] },
  { name: 'BPE (700 ids), untied, RoPE by halves, GQA, SwiGLU width 144', dir: 'bpe',   // 144: ffn_down is F16 in q8_0
    flags: ['--n-head', '4', '--n-kv-head', '2', '--tied', 'false', '--rope', 'halves', '--tokenizer', tok,
            '--hidden-dim', '144', '--steps', '200'] },
];
for (const m of models) {
  m.ckpt = path.join(work, m.dir, 'last.safetensors');
  run(['train', ...common, ...m.flags, '--out', path.join(work, m.dir)]);
  for (const type of ['f32', 'f16', 'q8_0']) {
    const file = path.join(work, `${m.dir}.${type}.gguf`);
    run(['export', '--ckpt', m.ckpt, '--format', 'gguf', '--type', type, '--out', file]);
    // and back: the import's tokenizer must encode as llama.cpp encodes the file
    run(['import', '--format', 'gguf', '--model', file, '--out', path.join(work, `${m.dir}.${type}.back.safetensors`)]);
  }
}

// tapegrad's ids of a text as sample encodes a prompt: BOS, then " " + text
function tapegradIds(m, text) {
  if (m.dir === 'bytes') return [1, ...Buffer.from(' ' + text, 'utf8')].map((b, i) => (i ? b + 3 : b));
  const out = run(['tokenizer', 'encode', '--tokenizer', tok], Buffer.from(' ' + text, 'utf8')).toString().trim();
  return [1, ...out.split(/\s+/).map(Number)];
}

// the ids llama.cpp gives for tapegrad's (util.pieceSpeller: a piece that is a character's first bytes)
const spell = util.pieceSpeller(util.decodePieces(run, tok));
function asLlamaCpp(m, ids) { return m.dir === 'bpe' ? spell(ids) : [ids, 0]; }

// The exports' weights against gguf-py's quantizers (llama.cpp's Python
// package, in the npm package's git bundle of llama.cpp's source), with
// Debian's python3-numpy (scripts/reference-tools.sh installs it)
function checkQuants() {
  const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  try {
    execFileSync(python, ['-c', 'import numpy'], { stdio: 'ignore' });
  } catch (e) {
    const ci = process.env.CI === 'true';
    (ci ? bad : (m) => console.log(`skipped ${m}`))(`the byte comparison with gguf-py: no python3 with numpy`);
    return;
  }
  const repo = path.join(work, 'llama.cpp');
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, 'fetch', '-q', path.join(pkg, 'llama', 'gitRelease.bundle'), 'HEAD']);
  execFileSync('sh', ['-c', `git -C "${repo}" archive FETCH_HEAD gguf-py | tar -x -C "${repo}"`]);
  for (const m of models) {
    const files = ['f32', 'f16', 'q8_0'].map((t) => path.join(work, `${m.dir}.${t}.gguf`));
    let out, rc = 0;
    try {
      out = execFileSync(python, [path.join(src, 'tests', 'gguf_quants.py'), path.join(repo, 'gguf-py'), ...files])
        .toString();
    } catch (e) {
      out = (e.stdout || '').toString() + (e.stderr || '').toString();
      rc = 1;
    }
    for (const line of out.trim().split('\n')) {
      const msg = `${m.name}: ${line.replace(/^(ok|FAIL) /, '').replace(work + '/', '')}`;
      if (rc === 0 && line.startsWith('ok ')) ok(msg); else bad(msg);
    }
  }
}

(async () => {
  checkQuants();
  const { getLlama } = await import(pathToFileURL(path.join(pkg, 'dist', 'index.js')).href);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const version = require(path.join(pkg, 'package.json')).version;
  console.log(`node-llama-cpp ${version}`);
  for (const m of models) {
    const nll = {};
    for (const type of ['f32', 'f16', 'q8_0']) {
      const model = await llama.loadModel({ modelPath: path.join(work, `${m.dir}.${type}.gguf`) });
      const ctxSize = model.trainContextSize;
      const context = await model.createContext({ contextSize: ctxSize, sequences: 1, threads: 1 });
      const seq = context.getSequence();
      const label = `${m.name}, ${type}`;
      // the import of the export encodes as llama.cpp encodes the file (the text alone: the
      // imported tokenizer puts the space in front itself, and tokenizer encode no BOS)
      const back = path.join(work, `${m.dir}.${type}.back.safetensors`);
      for (const [what, text] of [['\'First Citizen:\'', 'First Citizen:'], ['varied text', varied],
                                  ['unseen English', unseen]]) {
        const ours = run(['tokenizer', 'encode', '--tokenizer', back], Buffer.from(text, 'utf8')).toString().trim()
          .split(/\s+/).map(Number);
        const got = model.tokenize(text);
        const i = util.firstDiff(ours, got);
        if (i < 0) ok(`${label}: the import of the export encodes the ${what} as llama.cpp does (${got.length} ids)`);
        else bad(`${label}: the import of the export encodes the ${what} otherwise, from id ${i}: tapegrad ` +
                 `${ours.slice(i, i + 6)}, llama.cpp ${got.slice(i, i + 6)}`);
      }
      if (type === 'f32') {
        // ids
        for (const [what, text] of [['varied text', varied], ['unseen English', unseen]]) {
          const ours = tapegradIds(m, text);
          const [want, prefixes] = asLlamaCpp(m, ours);
          const got = [model.tokens.bos, ...model.tokenize(text)];
          const i = util.firstDiff(want, got);
          if (i < 0 && (what !== 'unseen English' || !prefixes))
            ok(`${label}: llama.cpp's ids of the ${what} equal tapegrad's (${got.length} ids` +
               (prefixes ? `; ${prefixes} pieces that are a character's first bytes spelled as their bytes, as ` +
                           `docs/formats.md says)` : ')'));
          else bad(`${label}: ids of the ${what} differ at ${i}: tapegrad ${ours.slice(i, i + 6)} (as llama.cpp ` +
                   `would give them: ${want.slice(i, i + 6)}), llama.cpp ${got.slice(i, i + 6)}`);
        }
        // greedy continuation: the command docs/formats.md gives (BOS, then the prompt, as sample)
        const prompt = 'ROMEO:\nWhat';
        const n = 220;
        const ours = run(['sample', '--ckpt', m.ckpt, '--prompt', prompt, '--tokens', String(n), '--temperature', '0'])
          .toString();
        const theirs = execFileSync(process.execPath, [path.join(src, 'scripts', 'gguf-sample.js'),
          path.join(work, `${m.dir}.f32.gguf`), '--prompt', prompt, '--tokens', String(n)], { env }).toString();
        // the same for at least 150 bytes (the bound): an undertrained
        // model meets near-ties, where single-precision sums in another order
        // may pick the other byte further on
        const a = Buffer.from(ours), b = Buffer.from(theirs);
        let same = 0;
        while (same < a.length && same < b.length && a[same] === b[same]) same++;
        const made = a.length - Buffer.byteLength(prompt) - 1;
        const agreed = Math.min(same, a.length - 1) - Buffer.byteLength(prompt);
        if (agreed >= 150)
          ok(`${label}: scripts/gguf-sample.js's greedy continuation equals tiny_gpt sample's for ${agreed} of its ${made} bytes ` +
             `(at least 150): ${JSON.stringify(ours.slice(prompt.length, prompt.length + 60))}...`);
        else bad(`${label}: greedy continuations agree for ${agreed} bytes only: tiny_gpt ` +
                 `${JSON.stringify(ours.slice(0, 200))} llama.cpp ${JSON.stringify(theirs.slice(0, 200))}`);
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
        if (mt && Number(mt[2]) === ids.length - 1 && rel <= 1e-4)
          ok(`${label}: mean nll ${nll.f32.toFixed(6)} over ${ids.length - 1} predictions, tiny_gpt eval --text ` +
             `${mt[1]}: relative difference ${rel.toExponential(2)} (at most 1e-4)`);
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
