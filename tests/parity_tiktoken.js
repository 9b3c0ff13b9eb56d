#!/usr/bin/env node
// tapegrad's GPT-2 encoder against tiktoken's (the npm `tiktoken` package,
// tiktoken's Rust core compiled to WebAssembly): the ids of
// `tiny_gpt tokenizer encode --tokenizer gpt2.tiktoken` must equal
// encode_ordinary's on a few hundred KB of varied text, section by
// section: English, source code, whitespace runs, numbers, contractions,
// emoji, CJK, Arabic and other scripts, combining marks, random code
// points, and invalid UTF-8 (raw bytes for tapegrad; for tiktoken, which
// takes a string, the same bytes decoded by TextDecoder, i.e. U+FFFD per
// maximal ill-formed subpart).
//   node tests/parity_tiktoken.js path/to/tiny_gpt SOURCE_DIR
// The package is looked for in $TAPEGRAD_NODE_MODULES when it is set,
// otherwise in SOURCE_DIR/bench/node_modules: where
// scripts/reference-tools.sh installs it. Without it the test is skipped
// (exit 77), or fails (exit 1) when the environment has CI=true. Prints
// one line per section, then "N passed, M failed".
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const [bin, src] = process.argv.slice(2);
if (!bin || !src) {
  console.error('usage: node tests/parity_tiktoken.js TINY_GPT SOURCE_DIR');
  process.exit(2);
}
const modules = require('./node_util.js').requirePackages('parity_tiktoken', src, ['tiktoken']);
const { get_encoding } = require(path.join(modules, 'tiktoken'));
const version = require(path.join(modules, 'tiktoken', 'package.json')).version;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg_tiktoken_'));
const ranks = path.join(work, 'gpt2.tiktoken');
execFileSync(process.execPath, [path.join(src, 'scripts', 'gpt2-tiktoken.js'), modules, ranks], { stdio: 'ignore' });
const enc = get_encoding('gpt2');

// ---- a small seeded generator (xorshift32), so every run tests the same text
let seed = 20240520;
function rnd() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const int = (n) => Math.floor(rnd() * n);
function repeat(n, f) { let s = ''; for (let i = 0; i < n; i++) s += f(i); return s; }

// ---- the sections: [name, string] or [name, Buffer] (raw bytes)
const sections = [];
const shakespeare = [process.env.TAPEGRAD_SHAKESPEARE, path.join(src, '..', 'shared', 'data', 'tinyshakespeare.txt'),
                     path.join(src, '..', '..', 'shared', 'data', 'tinyshakespeare.txt')]
  .filter(Boolean).find((p) => fs.existsSync(p));
if (shakespeare) {
  sections.push(['English (tinyshakespeare, first 120 KB)', fs.readFileSync(shakespeare, 'utf8').slice(0, 120000)]);
} else {
  const words = ['the', 'cat', 'sees', 'a', 'dog', 'and', 'it', "isn't", 'running', 'quickly', 'Mr.', 'Smith',
                 'said,', '"Hello"', 'world!', 'They', "we'll", "you've", 'JSON', 'e-mail', '(maybe)'];
  sections.push(['English (generated)', repeat(20000, (i) => pick(words) + (i % 17 === 16 ? '.\n' : ' '))]);
}
let code = '';
for (const f of ['text/encode.c', 'text/bpe_train.c', 'bench/bench.py', 'tests/parity_tiktoken.js', 'CMakeLists.txt'])
  if (fs.existsSync(path.join(src, f))) code += fs.readFileSync(path.join(src, f), 'utf8');
sections.push(['source code (C, Python, JavaScript, CMake)', code.slice(0, 120000)]);
const spaces = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\u00a0', '\u3000', '\u2028', '\u0085', '\u000b', '\f',
                '\u2003', '\u200b', '\u180e', '\ufeff'];
sections.push(['whitespace runs', repeat(6000, () => repeat(1 + int(6), () => pick(spaces)) + pick(['a', 'Z', '1', '.', '', 'é']))]);
sections.push(['numbers', repeat(4000, () => pick([String(int(1e9)), (rnd() * 1000).toFixed(int(5)), '1,234,567',
  '3.14159', '-42', '0x' + int(1e6).toString(16), '٣٤٥', '१२३', '½', '²', '①', 'Ⅻ', '2024-05-20']) + pick([' ', '', ', ', '\n']))]);
sections.push(['contractions and case', repeat(3000, () => pick(["don't", "DON'T", "it's", "It'S", "we'll", "they've",
  "I'm", "she'd", "'re", "''s", "'", "o'clock", "rock'n'roll", "’s", "l'homme"]) + pick([' ', '', '  ', '\n']))]);
sections.push(['emoji', repeat(3000, () => pick(['😀', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '❤️', '🏳️‍🌈', '🤖', '✨', '🧑🏿‍🚀', '#️⃣', '1️⃣']) +
  pick(['', ' ', 'a', '!', '\n']))]);
sections.push(['CJK, kana, hangul', repeat(2500, () => pick(['東京', '你好世界', 'こんにちは', 'カタカナ', '한국어', '漢字',
  '。', '、', '「引用」', 'ｆｕｌｌ', '𠮷野家', '㈱']) + pick(['', ' ', '\n']))]);
sections.push(['Arabic, Hebrew, Devanagari, Thai, Cyrillic, Greek', repeat(2500, () => pick(['مرحبا', 'بالعالم', 'שלום',
  'नमस्ते', 'दुनिया', 'สวัสดี', 'Привет', 'мир', 'Καλημέρα', 'κόσμε', 'ﷺ', 'ـــ']) + pick([' ', '', '،', '\n']))]);
sections.push(['combining marks', repeat(3000, () => pick(['e\u0301', 'a\u0308\u0304', 'Z\u0336\u0351\u0317', 'n\u0303',
  '\u0301', 'ก\u0e34\u0e49', 'क\u094d\u0937', '\u20dd', 'x\u200d']) + pick(['', ' ', 'q']))]);
// random code points from every plane (no surrogates), except the 9392
// that Unicode 15.0 to 16.0 made letters or digits: tiktoken 1.0.22's
// regex tables are Unicode 16.0, Debian 12's PCRE2 10.42 has 14.0, so
// there the two split differently (scripts/tiktoken-unicode-scan.js,
// which tries every code point, finds exactly these ranges; see
// docs/tokenizers.md)
const newer = ('1c89-1c8a a7cb-a7cd a7da-a7dc 105c0-105f3 10d40-10d65 10d6f-10d85 10ec2-10ec4 1123f-11240 11380-11389 1138b 1138e 11390-113b5 113b7 113d1 113d3 116d0-116e3 11bc0-11be0 11bf0-11bf9 11f02 11f04-11f10 11f12-11f33 11f50-11f59 1342f 13441-13446 13460-143fa 16100-1611d 16130-16139 16d40-16d6c 16d70-16d79 18cff 1b132 1b155 1ccf0-1ccf9 1d2c0-1d2d3 1df25-1df2a 1e030-1e06d 1e4d0-1e4eb 1e4f0-1e4f9 1e5d0-1e5ed 1e5f0-1e5fa 2b739 2ebf0-2ee5d 31350-323af').split(' ').map((r) => r.split('-').map((x) => parseInt(x, 16)))
  .map(([a, b]) => [a, b === undefined ? a : b]);
function randomPoint() {
  for (;;) {
    const c = rnd() < 0.6 ? int(0x10000) : int(0x110000);
    if (c >= 0xd800 && c < 0xe000) continue;
    if (newer.some(([a, b]) => c >= a && c <= b)) continue;
    return String.fromCodePoint(c);
  }
}
sections.push(['random code points', repeat(12000, () => randomPoint() + (rnd() < 0.2 ? ' ' : ''))]);
sections.push(['special token text (encoded as ordinary text)', repeat(500, () => pick(['<|endoftext|>', '<|', '|>',
  'end<|endoftext|>of', ' <|endoftext|> ']))]);
const bytes = Buffer.alloc(40000);
for (let i = 0; i < bytes.length; i++) bytes[i] = rnd() < 0.5 ? 0x20 + int(0x5f) : int(256);
sections.push(['random bytes (invalid UTF-8)', bytes]);
const bad = ['\xff', '\xc0\xaf', '\xe2\x82', '\xed\xa0\x80', '\xf0\x9f\x98', '\xf4\x90\x80\x80', '\x80\x80', '\xc3'];
const parts = [];
for (let i = 0; i < 4000; i++)
  parts.push(Buffer.from(pick(['hello ', 'world', ' 123', 'é', '😀', '  ', '\n'])), Buffer.from(pick(bad), 'latin1'));
sections.push(['ill-formed sequences among valid text', Buffer.concat(parts)]);

// ---- compare, section by section
let passed = 0, failed = 0, total = 0;
for (const [name, s] of sections) {
  const raw = Buffer.isBuffer(s) ? s : Buffer.from(s, 'utf8');
  const str = Buffer.isBuffer(s) ? new TextDecoder().decode(s) : s;
  total += raw.length;
  const want = Array.from(enc.encode_ordinary(str));
  const file = path.join(work, 'in.txt');
  fs.writeFileSync(file, raw);
  const out = execFileSync(bin, ['tokenizer', 'encode', '--tokenizer', ranks], { input: raw, maxBuffer: 1 << 28 })
    .toString().trim();
  const got = out ? out.split(' ').map(Number) : [];
  let i = 0;
  while (i < want.length && i < got.length && want[i] === got[i]) i++;
  if (i === want.length && i === got.length) {
    console.log(`ok ${name}: ${raw.length} bytes, ${got.length} ids equal`);
    passed++;
  } else {
    const ctx = (a) => JSON.stringify(Buffer.from(enc.decode(Uint32Array.from(a.slice(Math.max(0, i - 3), i + 4))))
      .toString('utf8'));
    console.log(`FAIL ${name}: ids differ at ${i} of ${want.length} (tiktoken) / ${got.length} (tapegrad)`);
    console.log(`  tiktoken ${want.slice(Math.max(0, i - 3), i + 4).join(' ')} ${ctx(want)}`);
    console.log(`  tapegrad ${got.slice(Math.max(0, i - 3), i + 4).join(' ')} ${ctx(got)}`);
    failed++;
  }
}
enc.free();
fs.rmSync(work, { recursive: true, force: true });
console.log(`tiktoken ${version}, ${total} bytes in ${sections.length} sections`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
