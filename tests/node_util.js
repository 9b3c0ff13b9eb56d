// What the node tests share: finding the reference npm packages (skip or
// fail), the texts the llama.cpp tests train and tokenize on, and how
// llama.cpp's SentencePiece-style tokenizer spells a tapegrad BPE piece
// that is only a character's first bytes.
'use strict';
const fs = require('fs');
const path = require('path');

// The node_modules folder holding every one of `packages`: $TAPEGRAD_NODE_MODULES
// when set, else SOURCE_DIR/bench/node_modules. When one is missing, says so
// and exits 77 (CTest's "skipped"), or 1 under CI=true (where a parity test
// that does not run is a failure).
function requirePackages(test, src, packages) {
  const modules = path.resolve(process.env.TAPEGRAD_NODE_MODULES || path.join(src, 'bench', 'node_modules'));
  for (const p of packages)
    if (!fs.existsSync(path.join(modules, p, 'package.json'))) {
      const ci = process.env.CI === 'true';
      console.log(`${test}: the npm ${p} package is not in ${modules} (scripts/reference-tools.sh installs it): ` +
                  `${ci ? 'FAILED, not skipped, since CI=true' : 'skipped'}`);
      process.exit(ci ? 1 : 77);
    }
  return modules;
}

// The repository's own docs (English prose, code, tables: about 300 KB),
// so that every machine trains on the same text; a generated stand-in was
// so predictable (nll 0.15 nats) that 1e-4 relative was 1.6e-5 nats.
function docsText(src) {
  const docs = path.join(src, 'docs');
  return fs.readdirSync(docs).filter((f) => f.endsWith('.md')).sort()
    .map((f) => fs.readFileSync(path.join(docs, f), 'utf8')).join('\n');
}

// Text none of the models trained on: from the docs' 200 000th character
// on, whole lines of ASCII whose every character is in trainText (a byte
// vocabulary learned from trainText holds them all; llama.cpp aborts on
// a byte its vocabulary lacks), up to 3000 characters. Lines, not one
// fixed slice: an edit to the docs moves the slice, and a character
// outside ASCII there would test the speller (the varied text does that),
// not English.
function unseenText(english, trainText) {
  const have = new Set(trainText);
  let out = '';
  for (const line of english.slice(200000).split('\n')) {
    if (out.length >= 3000) break;
    if (/^[\x20-\x7e]*$/.test(line) && [...line].every((c) => have.has(c))) out += line + '\n';
  }
  if (!out.trim()) throw new Error('unseenText: no line after the docs\' 200 000th character is ASCII made of the training text\'s characters');
  return out;
}

// English, source code, whitespace runs, several scripts, emoji and combining marks.
const VARIED = [
  'Hello, world!  Two spaces,   three,\ttab,\t\ttwo tabs.\n\nA blank line above; trailing spaces   \n',
  'static int add(int a, int b) {\n    return a + b;   // sum\n}\n\tif (x != NULL && y[3] >= 0x1f) { puts("ok"); }\n',
  'def f(x):\n    return {"key": [1, 2.5, -3e-4]}  # Python\n',
  'Grüße aus Köln, naïve café, déjà vu. Ελληνικά κείμενα. Русский текст, ещё.\n',
  '東京は日本の首都です。你好，世界！ 한국어 문장입니다. こんにちは、カタカナ。\n',
  'مرحبا بالعالم. שלום עולם. नमस्ते दुनिया। สวัสดีชาวโลก\n',
  'emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🤖✨ and combining: e\u0301 a\u0308\u0304 n\u0303 Z\u0336\n',
  'spaces      and\n\n\n\nnewlines\r\n\u00a0nbsp\u3000ideographic  end',
].join('');

// tapegrad's BPE may hold a piece that is the first bytes of a character
// it did not complete; llama.cpp's "llama" tokenizer never splits a
// character and gives such a character as its bytes (docs/formats.md,
// "GGUF"). A speller of tapegrad's ids as llama.cpp's: decode(ids) gives
// the bytes of learned pieces (ids >= 259; byte b is id b + 3), each
// learned once. spell(ids) returns [llama.cpp's ids, how many pieces were
// spelled as bytes].
function pieceSpeller(decode) {
  const pieces = new Map();   // id -> its bytes
  return (ids) => {
    const learned = [...new Set(ids.filter((id) => id >= 259 && !pieces.has(id)))];
    if (learned.length) {
      const parts = decode(learned);
      if (parts.length !== learned.length) throw new Error(`decoding ${learned.length} pieces gave ${parts.length}`);
      learned.forEach((id, i) => pieces.set(id, parts[i]));
    }
    const out = [];
    let n = 0;
    for (const id of ids) {
      const piece = id >= 259 ? pieces.get(id) : null;
      let i = 0;
      while (piece && i < piece.length) {   // whole UTF-8 characters?
        const c = piece[i], len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        if (i + len > piece.length) break;
        i += len;
      }
      if (piece && i < piece.length) {
        n++;
        for (const b of piece) out.push(b + 3);
      } else out.push(id);
    }
    return [out, n];
  };
}

// The bytes of each learned piece by `tiny_gpt tokenizer decode` (run:
// tiny_gpt's arguments and stdin -> stdout as a Buffer), in one call: each
// id after the special <s> (id 1, which decodes as its text and which the
// tests' pieces do not hold).
function decodePieces(run, tok) {
  return (ids) => {
    const all = run(['tokenizer', 'decode', '--tokenizer', tok], ids.map((id) => `1 ${id}`).join(' ') + '\n');
    const parts = [];
    for (let at = 0; ;) {
      const next = all.indexOf('<s>', at + 3);
      parts.push(all.subarray(at + 3, next < 0 ? all.length : next));
      if (next < 0) break;
      at = next;
    }
    return parts;
  };
}

// The first index where a and b differ, -1 when they are equal.
function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i === a.length && i === b.length ? -1 : i;
}

module.exports = { requirePackages, docsText, unseenText, VARIED, pieceSpeller, decodePieces, firstDiff };
