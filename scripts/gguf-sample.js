#!/usr/bin/env node
// Greedy text from a GGUF file in llama.cpp (the npm package node-llama-cpp),
// the text `tiny_gpt sample --temperature 0` prints for the checkpoint the
// file was exported from:
//   build/tiny_gpt export --ckpt out-demo/best.safetensors --format gguf --out demo.gguf
//   build/tiny_gpt sample --ckpt out-demo/best.safetensors --prompt "the " --tokens 60 --temperature 0
//   node scripts/gguf-sample.js demo.gguf --prompt "the " --tokens 60
// What it does as sample does, which node-llama-cpp's `complete` command
// does not: BOS before the prompt when the file says so (a Llama's:
// `complete` puts none), the most likely token every time (no repeat
// penalty), an end at BOS or at a token llama.cpp ends texts with, and the
// prompt printed before the text, a newline after. It stops at the context
// (the file's context_length), where sample would go on with a sliding
// window, and says so. One thread unless --threads says more (tapegrad's
// models are small; llama.cpp's threads wait spinning).
//   node scripts/gguf-sample.js MODEL.gguf [--prompt TEXT] [--tokens N] [--threads N]
// node-llama-cpp is looked for in $TAPEGRAD_NODE_MODULES, then in this
// repository's bench/node_modules (scripts/reference-tools.sh installs it
// there), then where node finds packages.
'use strict';
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

function usage(why) {
  console.error(`gguf-sample: ${why}\nusage: node scripts/gguf-sample.js MODEL.gguf [--prompt TEXT] [--tokens N] [--threads N]`);
  process.exit(2);
}
const args = process.argv.slice(2);
let file = null, prompt = '', tokens = 256, threads = 1;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--prompt' && i + 1 < args.length) prompt = args[++i];
  else if (args[i] === '--tokens' && i + 1 < args.length) {
    tokens = Number(args[++i]);
    if (!Number.isInteger(tokens) || tokens < 1) usage(`--tokens ${args[i]}: a whole number of at least 1`);
  } else if (args[i] === '--threads' && i + 1 < args.length) {
    threads = Number(args[++i]);
    if (!Number.isInteger(threads) || threads < 1) usage(`--threads ${args[i]}: a whole number of at least 1`);
  } else if (!file && !args[i].startsWith('--')) file = args[i];
  else usage(`unknown argument ${args[i]}`);
}
if (!file) usage('no model file');

function packageEntry() {
  const dirs = [process.env.TAPEGRAD_NODE_MODULES, path.join(__dirname, '..', 'bench', 'node_modules')];
  for (const d of dirs)
    if (d && fs.existsSync(path.join(d, 'node-llama-cpp', 'package.json')))
      return pathToFileURL(path.join(path.resolve(d), 'node-llama-cpp', 'dist', 'index.js')).href;
  return 'node-llama-cpp';
}

(async () => {
  const { getLlama } = await import(packageEntry());
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: model.trainContextSize, sequences: 1, threads });
  const bos = model.tokens.bos;
  const ids = [...(model.tokens.shouldPrependBosToken && bos !== null ? [bos] : []), ...model.tokenize(prompt)];
  const room = model.trainContextSize - ids.length;
  if (room < 1) throw new Error(`the prompt is ${ids.length} tokens, the context ${model.trainContextSize}`);
  const gen = [];
  let ended = null;
  for await (const t of context.getSequence().evaluate(ids, { temperature: 0 })) {
    if (t === bos || model.isEogToken(t)) {
      ended = t;
      break;
    }
    gen.push(t);
    if (gen.length >= tokens || gen.length >= room) break;
  }
  process.stdout.write(prompt + model.detokenize(gen, false, ids) + '\n');
  if (ended !== null)
    console.error(`gguf-sample: stopped at token ${gen.length} of ${tokens}: the model produced ` +
                  `${ended === bos ? 'BOS' : 'a token that ends a text'} (id ${ended})`);
  else if (gen.length < tokens)
    console.error(`gguf-sample: stopped at token ${gen.length} of ${tokens}: the context of ` +
                  `${model.trainContextSize} tokens is full (tiny_gpt sample slides its window on)`);
  await context.dispose();
  await model.dispose();
  await llama.dispose();
})().catch((e) => {
  console.error(`gguf-sample: ${e.message || e}`);
  process.exit(1);
});
