#!/usr/bin/env node
// Writes GPT-2's ranks as a .tiktoken file ("base64(piece) rank" lines, rank
// order) from the npm `tiktoken` package, which ships them in its own
// layout (encoders/gpt2.json: one space-separated string, "! 0" then every
// piece's base64 in rank order). The pieces are read through the
// package's own encoder (decode_single_token_bytes of each rank), so this
// does not depend on that layout, and each is checked against the JSON.
//   node scripts/gpt2-tiktoken.js NODE_MODULES_DIR OUT.tiktoken
'use strict';
const fs = require('fs');
const path = require('path');
const [modules, out] = process.argv.slice(2);
if (!modules || !out) {
  console.error('usage: node scripts/gpt2-tiktoken.js NODE_MODULES_DIR OUT.tiktoken');
  process.exit(2);
}
const { get_encoding } = require(path.resolve(modules, 'tiktoken'));
const json = require(path.resolve(modules, 'tiktoken/encoders/gpt2.json'));
const enc = get_encoding('gpt2');
const listed = json.bpe_ranks.split(' ').slice(2);   // after "! 0": ranks from 0
const n = 50256;
if (listed.length !== n) throw new Error(`gpt2.json lists ${listed.length} pieces, not ${n}`);
const lines = [];
for (let r = 0; r < n; r++) {
  const b64 = Buffer.from(enc.decode_single_token_bytes(r)).toString('base64');
  if (b64 !== listed[r]) throw new Error(`rank ${r}: the encoder has ${b64}, gpt2.json ${listed[r]}`);
  lines.push(`${b64} ${r}\n`);
}
enc.free();
fs.writeFileSync(out, lines.join(''));
console.log(`${out}: ${n} ranks`);
