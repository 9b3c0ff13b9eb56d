#!/usr/bin/env node
// The tokenizer.json that `tiny_gpt export --format hf` writes for GPT-2's
// tokenizer, loaded by the Hugging Face tokenizers library (the npm
// `tokenizers` package, its Rust core), gives tapegrad's ids: a GPT with
// GPT-2's tiktoken ranks is trained for one step, exported, and on varied
// text (English, source code, whitespace runs, numbers, contractions,
// emoji, CJK, other scripts, combining marks, random code points) the
// library's ids (encode without special tokens) must equal
// `tiny_gpt tokenizer encode --tokenizer gpt2.tiktoken`'s, section by
// section; then the directory imported back (`tiny_gpt import --format
// hf`) must encode to the same ids too. Text holding "<|endoftext|>" is
// left out: the library matches an added token's text anywhere, tapegrad
// (like tiktoken's encode_ordinary) encodes it as ordinary text.
//   node tests/parity_hf_tokenizer.js path/to/tiny_gpt SOURCE_DIR
// The packages (tokenizers, and tiktoken for GPT-2's ranks) are looked for
// in $TAPEGRAD_NODE_MODULES when it is set, else SOURCE_DIR/bench/node_modules
// (scripts/reference-tools.sh installs them). Without them: skipped (77),
// or failed under CI=true. Prints one line per section, then "N passed, M failed".
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const [bin, src] = process.argv.slice(2);
if (!bin || !src) {
  console.error('usage: node tests/parity_hf_tokenizer.js TINY_GPT SOURCE_DIR');
  process.exit(2);
}
const modules = path.resolve(process.env.TAPEGRAD_NODE_MODULES || path.join(src, 'bench', 'node_modules'));
for (const p of ['tiktoken', 'tokenizers'])
  if (!fs.existsSync(path.join(modules, p, 'package.json'))) {
    const ci = process.env.CI === 'true';
    console.log(`parity_hf_tokenizer: the npm ${p} package is not in ${modules} ` +
                `(scripts/reference-tools.sh installs it): ${ci ? 'FAILED, not skipped, since CI=true' : 'skipped'}`);
    process.exit(ci ? 1 : 77);
  }
const { Tokenizer } = require(path.join(modules, 'tokenizers'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg_hf_tok_'));
const ranks = path.join(work, 'gpt2.tiktoken');
execFileSync(process.execPath, [path.join(src, 'scripts', 'gpt2-tiktoken.js'), modules, ranks], { stdio: 'ignore' });

// a GPT with GPT-2's tokenizer, exported, and imported back
const text = path.join(work, 'text.txt');
fs.writeFileSync(text, Array.from({ length: 60 }, (_, i) => `the cat sat on the mat ${i}.\n`).join(''));
execFileSync(bin, ['train', '--tokenizer', ranks, '--data', text, '--n-layer', '1', '--n-head', '2', '--n-embd', '8',
                   '--block-size', '16', '--steps', '1', '--batch-size', '1', '--eval-iters', '1', '--threads', '1',
                   '--out', path.join(work, 'run')], { stdio: 'ignore' });
const dir = path.join(work, 'hf');
execFileSync(bin, ['export', '--format', 'hf', '--ckpt', path.join(work, 'run', 'last.safetensors'), '--out', dir],
             { stdio: 'ignore' });
const back = path.join(work, 'back.safetensors');
execFileSync(bin, ['import', '--format', 'hf', '--model', dir, '--out', back], { stdio: 'ignore' });
const tok = Tokenizer.fromString(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));

// ---- the sections (a seeded xorshift32, so every run tests the same text)
let seed = 20261202;
function rnd() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const int = (n) => Math.floor(rnd() * n);
function repeat(n, f) { let s = ''; for (let i = 0; i < n; i++) s += f(i); return s; }
const sections = [];
const words = ['the', 'cat', 'sees', 'a', 'dog', 'and', 'it', "isn't", 'running', 'quickly', 'Mr.', 'Smith',
               'said,', '"Hello"', 'world!', 'They', "we'll", "you've", 'JSON', 'e-mail', '(maybe)'];
sections.push(['English', repeat(8000, (i) => pick(words) + (i % 17 === 16 ? '.\n' : ' '))]);
let code = '';
for (const f of ['formats/hf.c', 'tests/parity_hf.py', 'tests/parity_hf_tokenizer.js', 'CMakeLists.txt'])
  if (fs.existsSync(path.join(src, f))) code += fs.readFileSync(path.join(src, f), 'utf8');
sections.push(['source code (C, Python, JavaScript, CMake)', code.split('<|endoftext|>').join('<|end of text|>').slice(0, 100000)]);
const spaces = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\u00a0', '\u3000', '\u2028', '\u0085', '\u000b', '\f',
                '\u2003', '\u200b', '\ufeff'];
sections.push(['whitespace runs', repeat(4000, () => repeat(1 + int(6), () => pick(spaces)) + pick(['a', 'Z', '1', '.', '', 'é']))]);
sections.push(['numbers', repeat(3000, () => pick([String(int(1e9)), (rnd() * 1000).toFixed(int(5)), '1,234,567',
  '-42', '0x' + int(1e6).toString(16), '٣٤٥', '१२३', '½', '²', '①', 'Ⅻ', '2024-05-20']) + pick([' ', '', ', ', '\n']))]);
sections.push(['contractions and case', repeat(3000, () => pick(["don't", "DON'T", "it's", "It'S", "we'll", "they've",
  "I'm", "she'd", "'re", "''s", "'", "o'clock", "rock'n'roll", "’s", "l'homme"]) + pick([' ', '', '  ', '\n']))]);
sections.push(['emoji', repeat(2000, () => pick(['😀', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '❤️', '🏳️‍🌈', '🤖', '✨', '#️⃣']) +
  pick(['', ' ', 'a', '!', '\n']))]);
sections.push(['CJK, kana, hangul', repeat(2000, () => pick(['東京', '你好世界', 'こんにちは', 'カタカナ', '한국어', '漢字',
  '。', '、', '「引用」', 'ｆｕｌｌ', '𠮷野家']) + pick(['', ' ', '\n']))]);
sections.push(['Arabic, Hebrew, Devanagari, Thai, Cyrillic, Greek', repeat(2000, () => pick(['مرحبا', 'بالعالم', 'שלום',
  'नमस्ते', 'दुनिया', 'สวัสดี', 'Привет', 'мир', 'Καλημέρα', 'κόσμε']) + pick([' ', '', '،', '\n']))]);
sections.push(['combining marks', repeat(2000, () => pick(['e\u0301', 'a\u0308\u0304', 'Z\u0336\u0351\u0317', 'n\u0303',
  '\u0301', 'ก\u0e34\u0e49', 'क\u094d\u0937', '\u20dd', 'x\u200d']) + pick(['', ' ', 'q']))]);
function randomPoint() {   // the BMP's letters, digits and marks of long-standing scripts
  for (;;) {
    const c = int(0x3000);
    if (c < 0x20 || (c >= 0x7f && c < 0xa0)) continue;
    return String.fromCodePoint(c);
  }
}
sections.push(['random code points below U+3000', repeat(8000, () => randomPoint() + (rnd() < 0.2 ? ' ' : ''))]);

// ---- compare, section by section
let passed = 0, failed = 0;
(async () => {
  for (const [name, s] of sections) {
    const want = Array.from((await tok.encode(s, null, { addSpecialTokens: false })).getIds());
    for (const [who, tf] of [['GPT-2 ranks', ranks], ['the import', back]]) {
      const out = execFileSync(bin, ['tokenizer', 'encode', '--tokenizer', tf], { input: Buffer.from(s, 'utf8'),
                                                                                maxBuffer: 1 << 28 }).toString().trim();
      const got = out ? out.split(' ').map(Number) : [];
      let i = 0;
      while (i < want.length && i < got.length && want[i] === got[i]) i++;
      if (i === want.length && i === got.length) {
        console.log(`ok ${name} (tapegrad with ${who}): ${Buffer.byteLength(s)} bytes, ${got.length} ids equal`);
        passed++;
      } else {
        console.log(`FAIL ${name} (tapegrad with ${who}): ids differ at ${i} of ${want.length} (tokenizers) / ` +
                    `${got.length} (tapegrad): ${want.slice(Math.max(0, i - 3), i + 4).join(' ')} vs ` +
                    `${got.slice(Math.max(0, i - 3), i + 4).join(' ')}`);
        failed++;
      }
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed (tokenizers ${require(path.join(modules, 'tokenizers', 'package.json')).version})`);
  process.exit(failed ? 1 : 0);
})();
