#!/usr/bin/env node
// Which code points tapegrad's GPT-2 pre-split classifies differently from
// tiktoken's: every code point c that is not whitespace or a control goes
// through both encoders in the context "c's\n" (a letter or digit ends its
// word before "'s", which is then one token; other characters swallow the
// apostrophe), and the code points whose ids differ are printed as ranges.
// With Debian 12's PCRE2 10.42 (Unicode 14.0) against tiktoken 1.0.22
// (Unicode 16.0) it finds the 9392 code points tests/parity_tiktoken.js
// leaves out of its random text; with a PCRE2 as new as tiktoken, none.
//   node scripts/tiktoken-unicode-scan.js NODE_MODULES TINY_GPT GPT2.tiktoken
'use strict';
const path = require('path');
const { execFileSync } = require('child_process');
const [modules, bin, ranks] = process.argv.slice(2);
if (!modules || !bin || !ranks) {
  console.error('usage: node scripts/tiktoken-unicode-scan.js NODE_MODULES TINY_GPT GPT2.tiktoken');
  process.exit(2);
}
const enc = require(path.resolve(modules, 'tiktoken')).get_encoding('gpt2');
const points = [];
for (let c = 0x20; c < 0x110000; c++) {
  if (c >= 0xd800 && c < 0xe000) continue;
  const ch = String.fromCodePoint(c);
  if (!/\s/u.test(ch) && c !== 0x85 && c !== 0x180e) points.push(c);
}
const byLine = (ids) => {   // ids of each "c's\n", split after each newline (198)
  const out = [];
  let cur = [];
  for (const x of ids) { cur.push(x); if (x === 198) { out.push(cur.join(',')); cur = []; } }
  return out;
};
const differ = [];
for (let k = 0; k < points.length; k += 100000) {
  const part = points.slice(k, k + 100000);
  const text = part.map((c) => String.fromCodePoint(c) + "'s\n").join('');
  const want = byLine(Array.from(enc.encode_ordinary(text)));
  const got = byLine(execFileSync(bin, ['tokenizer', 'encode', '--tokenizer', ranks], { input: Buffer.from(text),
    maxBuffer: 1 << 28 }).toString().trim().split(' ').map(Number));
  if (want.length !== part.length || got.length !== part.length) throw new Error('the lines do not align');
  part.forEach((c, i) => { if (want[i] !== got[i]) differ.push(c); });
}
const ranges = [];
for (const c of differ) {
  if (ranges.length && ranges[ranges.length - 1][1] === c - 1) ranges[ranges.length - 1][1] = c;
  else ranges.push([c, c]);
}
console.log(`${differ.length} code points differ, in ${ranges.length} ranges:`);
console.log(ranges.map(([a, b]) => a.toString(16) + (a === b ? '' : '-' + b.toString(16))).join(' '));
