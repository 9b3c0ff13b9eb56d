#!/usr/bin/env node
// GGUF files written by gguf-py (llama.cpp's own Python writer), imported
// with `tiny_gpt import --format gguf` and scored as llama.cpp scores them
// (the npm package node-llama-cpp). Three files (tests/gguf_llama_write.py):
// an untied GQA Llama whose matrices are F32, F16, BF16 and Q8_0 with a
// SentencePiece-style vocabulary that adds the space prefix, a tied
// F32 Llama with another rope base and eps whose vocabulary does not, and
// a GPT (llama.cpp's gpt2, biases, F32/F16/BF16/Q8_0 matrices) with a
// GPT-2-style byte-level BPE with merges. For each:
//   - the checkpoint's weights are gguf-py's dequantization bit for bit,
//     and its config the file's keys (gguf_llama_write.py check);
//   - tapegrad's ids of a varied text (a Llama's BOS, then the text, as
//     sample encodes a prompt) equal llama.cpp's;
//   - `tiny_gpt eval --text`'s mean nll per token equals llama.cpp's on
//     the same ids within 1e-4 relative (the F32 file; 0.5% for the
//     mixed ones, whose activations llama.cpp rounds to each weight's type);
//   - tapegrad's f32 GGUF export of the import holds the file's tokenizer
//     keys, every value the same, and llama.cpp scores it as eval --text
//     does within 1e-4;
//   - `train --init` fine-tunes the imported checkpoint, tokenizer kept.
//   node tests/gguf_import.js path/to/tiny_gpt SOURCE_DIR
// The package is looked for as tests/gguf_llama.js looks for it; without
// it (or python3 with numpy) the test is skipped (exit 77), or fails when
// CI=true.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { pathToFileURL } = require('url');

const [bin, src] = process.argv.slice(2);
const ci = process.env.CI === 'true';
const modules = require('./node_util.js').requirePackages('gguf_import', src, ['node-llama-cpp']);
const pkg = path.join(modules, 'node-llama-cpp');
const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
function skip(why) {
  console.log(`gguf_import: ${why} (scripts/reference-tools.sh installs it): ${ci ? 'FAILED, not skipped, since CI=true' : 'skipped'}`);
  process.exit(ci ? 1 : 77);
}
try { execFileSync(python, ['-c', 'import numpy'], { stdio: 'ignore' }); } catch (e) { skip('no python3 with numpy'); }

let passed = 0, failed = 0;
const ok = (m) => { passed++; console.log(`ok ${m}`); };
const bad = (m) => { failed++; console.log(`FAIL ${m}`); };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg_gguf_import_'));
const env = { ...process.env, OPENBLAS_NUM_THREADS: '1' };
function run(cmd, args, input) {
  try {
    return execFileSync(cmd, args, { env, input, maxBuffer: 1 << 26, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
  } catch (e) {
    throw new Error(`${path.basename(cmd)} ${args.join(' ')}: ${(e.stdout || '')}${e.stderr || e.message}`);
  }
}

// gguf-py from the package's git bundle of llama.cpp's source
const repo = path.join(work, 'llama.cpp');
execFileSync('git', ['init', '-q', repo]);
execFileSync('git', ['-C', repo, 'fetch', '-q', path.join(pkg, 'llama', 'gitRelease.bundle'), 'HEAD']);
execFileSync('sh', ['-c', `git -C "${repo}" archive FETCH_HEAD gguf-py | tar -x -C "${repo}"`]);
const ggufPy = path.join(repo, 'gguf-py'), writer = path.join(src, 'tests', 'gguf_llama_write.py');
console.log(run(python, [writer, 'write', ggufPy, work]).trim());

const text = 'the cat and the hat, with that thing: this is the end of it!\n' +
  'Then they went on, and on   and on.\tTabs\tand  two spaces; (the "quotes") 0123456789\n' +
  'Some letters are not pieces: xyzzy, QUIZ, café, 日本語, Grüße, emoji 😀 and é e\u0301.\n';
const textFile = path.join(work, 'text.txt'), trainFile = path.join(work, 'train.txt');
fs.writeFileSync(textFile, text);
fs.writeFileSync(trainFile, text.repeat(20));

let llama;
// llama.cpp's mean nll of ids in the file's model, position i predicting id i + 1
async function llamaNll(file, ids) {
  const model = await llama.loadModel({ modelPath: file });
  // the KV cache in F32 (llama.cpp's default F16 rounds K and V)
  const context = await model.createContext({ contextSize: model.trainContextSize, sequences: 1, threads: 1,
    experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
  const input = ids.map((t, k) => (k < ids.length - 1 ? [t, { generateNext: { probabilities: true,
    options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } }] : t));
  const out = await context.getSequence().controlledEvaluate(input);
  let sum = 0;
  for (let k = 0; k + 1 < ids.length; k++) sum -= Math.log(out[k].next.probabilities.get(ids[k + 1]));
  await context.dispose();
  await model.dispose();
  return sum / (ids.length - 1);
}

(async () => {
  const { getLlama } = await import(pathToFileURL(path.join(pkg, 'dist', 'index.js')).href);
  llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  for (const name of ['mixed', 'tied', 'gpt2']) {
    const gpt = name === 'gpt2';   // no BOS
    const gguf = path.join(work, `${name}.gguf`), ckpt = path.join(work, `${name}.safetensors`);
    run(bin, ['import', '--format', 'gguf', '--model', gguf, '--out', ckpt]);
    try {
      ok(run(python, [writer, 'check', ggufPy, gguf, ckpt]).trim().replace(/^ok /, '').replace(work + '/', ''));
    } catch (e) {
      bad(e.message.replace(work + '/', ''));
    }
    const model = await llama.loadModel({ modelPath: gguf });
    const ids = [...(gpt ? [] : [model.tokens.bos]), ...model.tokenize(text)];
    const ours = [...(gpt ? [] : [1]),
                  ...run(bin, ['tokenizer', 'encode', '--tokenizer', ckpt], text).trim().split(/\s+/).map(Number)];
    let i = 0;
    while (i < ids.length && ids[i] === ours[i]) i++;
    if (i === ids.length && i === ours.length) ok(`${name}: tapegrad's ids of the text equal llama.cpp's (${ids.length} ids)`);
    else bad(`${name}: ids differ at ${i}: tapegrad ${ours.slice(i, i + 6)}, llama.cpp ${ids.slice(i, i + 6)}`);
    const window = ids.slice(0, model.trainContextSize);
    await model.dispose();
    // eval --text against llama.cpp on the file, and on tapegrad's f32 export of the import (whose
    // tokenizer keys must be the file's)
    const again = path.join(work, `${name}.again.gguf`);
    run(bin, ['export', '--ckpt', ckpt, '--format', 'gguf', '--out', again]);
    try {
      ok(run(python, [writer, 'vocab', ggufPy, gguf, again]).trim().replace(/^ok /, '').split(work + '/').join(''));
    } catch (e) {
      bad(e.message.split(work + '/').join(''));
    }
    const line = run(bin, ['eval', '--ckpt', ckpt, '--text', textFile]);
    const m = /^nll ([0-9.]+) nats per token over ([0-9]+) predictions/.exec(line);
    for (const [file, tol] of [[gguf, name === 'tied' ? 1e-4 : 5e-3], [again, 1e-4]]) {
      // tol: llama.cpp rounds the activations that meet an F16, BF16 or Q8_0 matrix to its type
      const theirs = await llamaNll(file, window);
      const rel = m ? Math.abs(Number(m[1]) - theirs) / theirs : NaN;
      const what = `${name}${file === again ? ' exported again (f32)' : ''}`;
      if (m && Number(m[2]) === window.length - 1 && rel <= tol)
        ok(`${what}: tiny_gpt eval --text ${m[1]} nats per token over ${m[2]} predictions, llama.cpp ` +
           `${theirs.toFixed(6)}: relative difference ${rel.toExponential(2)} (at most ${tol})`);
      else bad(`${what}: tiny_gpt eval --text ${JSON.stringify(line)}, llama.cpp ${theirs} over ${window.length - 1}`);
    }
    // it fine-tunes as any checkpoint: train --init, the tokenizer kept
    const ft = path.join(work, `${name}_ft`);
    const log = run(bin, ['train', '--init', ckpt, '--data', trainFile, '--steps', '3', '--batch-size', '2',
                          '--eval-iters', '1', '--threads', '1', '--out', ft]);
    const kept = run(bin, ['tokenizer', 'encode', '--tokenizer', path.join(ft, 'last.safetensors')], text);
    if (/^val loss [0-9.]+$/m.test(log) && kept === run(bin, ['tokenizer', 'encode',
      '--tokenizer', ckpt], text))
      ok(`${name}: train --init fine-tunes it 3 steps, its tokenizer kept`);
    else bad(`${name}: train --init: ${log}`);
  }
  await llama.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed || passed !== 18 ? 1 : 0);
})().catch((e) => {
  console.log(`FAIL ${e.message || e}`);
  fs.rmSync(work, { recursive: true, force: true });
  process.exit(1);
});
