#!/usr/bin/env node
// The tokenizer.json that `tiny_gpt export --format hf` writes for each of
// tapegrad's tokenizers, loaded by the Hugging Face tokenizers library (the
// npm `tokenizers` package, its Rust core), gives tapegrad's ids, and
// `tiny_gpt import --format hf` reads a Llama's tokenizer.json as
// transformers writes it into a tokenizer giving the library's ids. On
// varied text (English, source code, whitespace runs, numbers,
// contractions, emoji, CJK, other scripts, combining marks, random code
// points), section by section, for each case:
//   gpt2        a GPT with GPT-2's tiktoken ranks (encode without special tokens)
//   bpe_gpt     a GPT with a tapegrad BPE (`tiny_gpt tokenizer train`)
//   bpe_llama   a Llama with it: the library's BOS template and ' ' + text
//   bytes_gpt   a GPT on a byte vocabulary (the sections cut to its bytes)
//   llama2c     a Llama on llama2.c's byte vocabulary (BOS, ' ', 3 + byte)
//   spm_import  a Llama tokenizer.json built here as transformers' Llama
//               converter builds one (pieces with U+2581, <0xXX> bytes,
//               byte_fallback, Prepend and Replace normalizers, every split
//               of each piece as merges in score order, a BOS template),
//               imported: a TG_TOK_SPM
//   spm_export  that import exported again (and the file is the same)
//   spm_llama2c the same pieces as llama2.c's own tokenizer.bin (' ' for
//               spaces, scores, run.c's merge floor) imported with a
//               model.bin, exported: Prepend(' '), merges with spaces as pairs
//   metaspace   the same tokenizer in transformers' newer form (a Metaspace
//               pre-tokenizer), imported with a notice: equal ids on every
//               section that does not begin with a space
// And for each case but metaspace, the library's decode(encode(text), true)
// is the text again, with and without a leading space of its own (a
// Prepend(' ') normalizer's space dropped by the decoder's Strip, as in
// transformers' Llama files).
// tapegrad's ids come from `tiny_gpt tokenizer encode` with the
// checkpoint (a Llama's: BOS, then ' ' + text for tapegrad's BPE, as
// train/dataset.c encodes documents), the byte vocabularies' by their rule
// (train/vocab.c). Each exported directory is imported back and must encode
// the same way. Text holding a special token's text ("<|endoftext|>",
// "<s>", ...) is left out: the library matches an added token anywhere,
// tapegrad encodes such text as ordinary text.
//   node tests/parity_hf_tokenizer.js path/to/tiny_gpt SOURCE_DIR
// The packages (tokenizers, and tiktoken for GPT-2's ranks) are looked for
// in $TAPEGRAD_NODE_MODULES when it is set, else SOURCE_DIR/bench/node_modules
// (scripts/reference-tools.sh installs them). Without them: skipped (77),
// or failed under CI=true. Prints one line per case and section, then "N passed, M failed".
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');

const [bin, src] = process.argv.slice(2);
if (!bin || !src) {
  console.error('usage: node tests/parity_hf_tokenizer.js TINY_GPT SOURCE_DIR');
  process.exit(2);
}
const modules = require('./node_util.js').requirePackages('parity_hf_tokenizer', src, ['tiktoken', 'tokenizers']);
const { Tokenizer } = require(path.join(modules, 'tokenizers'));
let passed = 0, failed = 0;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tg_hf_tok_'));
const ranks = path.join(work, 'gpt2.tiktoken');
execFileSync(process.execPath, [path.join(src, 'scripts', 'gpt2-tiktoken.js'), modules, ranks], { stdio: 'ignore' });

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
// the first n UTF-16 units of s, one fewer when the last would cut a surrogate pair (a text stays valid Unicode)
const head = (s, n) => s.slice(0, n - (n < s.length && /[\ud800-\udbff]/.test(s[n - 1]) ? 1 : 0));
const sections = [];
const words = ['the', 'cat', 'sees', 'a', 'dog', 'and', 'it', "isn't", 'running', 'quickly', 'Mr.', 'Smith',
               'said,', '"Hello"', 'world!', 'They', "we'll", "you've", 'JSON', 'e-mail', '(maybe)'];
sections.push(['English', repeat(8000, (i) => pick(words) + (i % 17 === 16 ? '.\n' : ' '))]);
let code = '';
for (const f of ['formats/hf.c', 'tests/parity_hf.py', 'tests/parity_hf_tokenizer.js', 'CMakeLists.txt'])
  if (fs.existsSync(path.join(src, f))) code += fs.readFileSync(path.join(src, f), 'utf8');
sections.push(['source code (C, Python, JavaScript, CMake)', head(code.split('<|endoftext|>').join('<|end of text|>'), 100000)]);
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

const run = (args, input) => execFileSync(bin, args, { input, maxBuffer: 1 << 28, stdio: ['pipe', 'pipe', 'pipe'] });
const q = (args) => run(args).toString();
const special = /<\|endoftext\|>|<s>|<\/s>|<unk>/g;
for (const sec of sections) sec[1] = sec[1].replace(special, '<_>');

// ---- the models: trained for one step, exported, imported back
const tiny = ['--n-layer', '1', '--n-head', '2', '--n-embd', '8', '--block-size', '16', '--steps', '1', '--batch-size',
              '1', '--eval-iters', '1', '--threads', '1'];
const text = path.join(work, 'text.txt');
fs.writeFileSync(text, Array.from({ length: 60 }, (_, i) => `the cat sat on the mat ${i}. é 東京 😀\n\n`).join(''));
const corpus = path.join(work, 'corpus.txt');
fs.writeFileSync(corpus, head(sections.map((x) => x[1]).join('\n'), 400000));
const tokf = path.join(work, 'tok.safetensors');
q(['tokenizer', 'train', '--data', corpus, '--vocab-size', '1200', '--out', tokf]);
function model(name, args) {
  q(['train', ...args, '--data', text, ...tiny, '--out', path.join(work, name)]);
  const dir = path.join(work, 'hf_' + name), back = path.join(work, name + '_back.safetensors');
  q(['export', '--format', 'hf', '--ckpt', path.join(work, name, 'last.safetensors'), '--out', dir]);
  q(['import', '--format', 'hf', '--model', dir, '--out', back]);
  return { dir, ckpt: path.join(work, name, 'last.safetensors'), back };
}
const encode = (tf, s) => {
  const out = run(['tokenizer', 'encode', '--tokenizer', tf], Buffer.from(s, 'utf8')).toString().trim();
  return out ? out.split(' ').map(Number) : [];
};
const bytesOf = (s) => Array.from(Buffer.from(s, 'utf8'));
const cases = [];
{
  const m = model('gpt2', ['--tokenizer', ranks]);
  cases.push({ name: 'gpt2', dir: m.dir, special: false, who: [['GPT-2 ranks', (s) => encode(ranks, s)],
                                                              ['the import', (s) => encode(m.back, s)]] });
}
for (const arch of ['gpt', 'llama']) {
  const m = model('bpe_' + arch, ['--arch', arch, '--tokenizer', tokf]);
  const ids = (tf) => arch === 'gpt' ? (s) => encode(tf, s) : (s) => [1, ...encode(tf, ' ' + s)];
  cases.push({ name: 'bpe_' + arch, dir: m.dir, special: arch === 'llama',
               who: [['the checkpoint', ids(m.ckpt)], ['the import', ids(m.back)]] });
}
{
  const m = model('bytes_gpt', []);
  const present = [...new Set(bytesOf(fs.readFileSync(text, 'utf8')))].sort((a, b) => a - b);
  const chars = [...new Set(Array.from(fs.readFileSync(text, 'utf8')))];
  cases.push({ name: 'bytes_gpt', dir: m.dir, special: false,
               cut: (s) => Array.from(s).map((c) => chars.includes(c) ? c : chars[c.codePointAt(0) % chars.length]).join(''),
               who: [['its bytes', (s) => bytesOf(s).map((b) => present.indexOf(b))]], ckpt: m.ckpt, back: m.back });
}
{
  const m = model('llama2c', ['--arch', 'llama']);
  cases.push({ name: 'llama2c', dir: m.dir, special: true, who: [['its bytes', (s) => [1, ...bytesOf(s ? ' ' + s : '').map((b) => b + 3)]]],
               ckpt: m.ckpt, back: m.back });
}

// ---- GPT-2 124M as Hugging Face publishes it: its config.json (n_embd
// shrunk from 768 to 24 so the random weights are 5 MB, not 500: every
// other size is GPT-2's), GPT2Model's names without "transformer.",
// Conv1D weights (in, out), and its tokenizer as transformers converts
// tiktoken ranks (each piece's merge: its bytes merged with the lower
// ranks alone), both as tokenizer.json and as vocab.json + merges.txt
{
  const dir = path.join(work, 'gpt2_124m');
  fs.mkdirSync(dir);
  const E = 24, NL = 12, NV = 50257, NP = 1024;
  const config = { activation_function: 'gelu_new', architectures: ['GPT2LMHeadModel'], attn_pdrop: 0.1,
    bos_token_id: 50256, embd_pdrop: 0.1, eos_token_id: 50256, initializer_range: 0.02, layer_norm_epsilon: 1e-05,
    model_type: 'gpt2', n_ctx: 1024, n_embd: E, n_head: 12, n_layer: NL, n_positions: NP, resid_pdrop: 0.1,
    summary_activation: null, summary_first_dropout: 0.1, summary_proj_to_labels: true, summary_type: 'cls_index',
    summary_use_proj: true, task_specific_params: { 'text-generation': { do_sample: true, max_length: 50 } },
    vocab_size: NV };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const tensors = [['wte.weight', [NV, E]], ['wpe.weight', [NP, E]]];
  for (let l = 0; l < NL; l++)
    for (const [n, sh] of [['ln_1.weight', [E]], ['ln_1.bias', [E]], ['attn.c_attn.weight', [E, 3 * E]],
                           ['attn.c_attn.bias', [3 * E]], ['attn.c_proj.weight', [E, E]], ['attn.c_proj.bias', [E]],
                           ['ln_2.weight', [E]], ['ln_2.bias', [E]], ['mlp.c_fc.weight', [E, 4 * E]],
                           ['mlp.c_fc.bias', [4 * E]], ['mlp.c_proj.weight', [4 * E, E]], ['mlp.c_proj.bias', [E]]])
      tensors.push([`h.${l}.${n}`, sh]);
  tensors.push(['ln_f.weight', [E]], ['ln_f.bias', [E]]);
  const header = { __metadata__: { format: 'pt' } };
  let at = 0;
  for (const [n, sh] of tensors) {
    const bytes = 4 * sh.reduce((a, b) => a * b, 1);
    header[n] = { dtype: 'F32', shape: sh, data_offsets: [at, at + bytes] };
    at += bytes;
  }
  let hj = JSON.stringify(header);
  hj += ' '.repeat((8 - (hj.length % 8)) % 8);
  const data = new Float32Array(at / 4);
  for (let i = 0; i < data.length; i++) data[i] = (rnd() - 0.5) * 0.2;
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hj.length));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([len, Buffer.from(hj), Buffer.from(data.buffer)]));
  // the tokenizer: GPT-2's stand-ins, each piece's merge by the lower ranks
  const pieceOf = fs.readFileSync(ranks, 'utf8').trim().split('\n').map((l) => Buffer.from(l.split(' ')[0], 'base64'));
  const rankOf = new Map(pieceOf.map((p, r) => [p.toString('latin1'), r]));
  const stand = [];
  { let k = 0; for (let b = 0; b < 256; b++) stand.push(String.fromCodePoint((b >= 33 && b <= 126) || (b >= 0xa1 && b <= 0xac) || b >= 0xae ? b : 256 + k++)); }
  const name = (p) => Array.from(p).map((b) => stand[b]).join('');
  const vocab2 = {};
  pieceOf.forEach((p, r) => { vocab2[name(p)] = r; });
  vocab2['<|endoftext|>'] = 50256;
  const merges2 = [];
  for (let r = 256; r < pieceOf.length; r++) {
    let parts = Array.from(pieceOf[r]).map((b) => Buffer.from([b]));
    while (parts.length > 2) {
      let best = -1, bestRank = r;
      for (let i = 0; i + 1 < parts.length; i++) {
        const q = rankOf.get(Buffer.concat([parts[i], parts[i + 1]]).toString('latin1'));
        if (q !== undefined && q < bestRank) { best = i; bestRank = q; }
      }
      parts.splice(best, 2, Buffer.concat([parts[best], parts[best + 1]]));
    }
    merges2.push(name(parts[0]) + ' ' + name(parts[1]));
  }
  const bl = (prefix, trim) => ({ type: 'ByteLevel', add_prefix_space: prefix, trim_offsets: trim, use_regex: true });
  const published = { version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
                     normalized: true, special: true }],
    normalizer: null, pre_tokenizer: bl(false, true), post_processor: bl(true, false), decoder: bl(false, true),
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
             fuse_unk: false, vocab: vocab2, merges: merges2 } };
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(published));
  const ck = path.join(work, 'gpt2_124m.safetensors');
  q(['import', '--format', 'hf', '--model', dir, '--out', ck]);
  const dir2 = path.join(work, 'gpt2_124m_pair'), ck2 = path.join(work, 'gpt2_124m_pair.safetensors');
  fs.mkdirSync(dir2);
  for (const f of ['config.json', 'model.safetensors']) fs.copyFileSync(path.join(dir, f), path.join(dir2, f));
  fs.writeFileSync(path.join(dir2, 'vocab.json'), JSON.stringify(vocab2));
  fs.writeFileSync(path.join(dir2, 'merges.txt'), '#version: 0.2\n' + merges2.join('\n') + '\n');
  q(['import', '--format', 'hf', '--model', dir2, '--out', ck2]);
  const evalText = path.join(work, 'eval.txt');
  fs.writeFileSync(evalText, head(sections[0][1], 4000));
  const nll = q(['eval', '--ckpt', ck, '--text', evalText]).trim();
  const ok = merges2.length === 50000 && /^nll [0-9.]+ nats per token over 1023 predictions/.test(nll);
  console.log(`${ok ? 'ok' : 'FAIL'} gpt2_124m: ${merges2.length} merges; the import evaluates: ${nll}`);
  ok ? passed++ : failed++;
  cases.push({ name: 'gpt2_124m', dir, special: false, who: [['its tokenizer.json', (s) => encode(ck, s)],
                                                            ['vocab.json + merges.txt', (s) => encode(ck2, s)]] });
}

// ---- a Llama tokenizer.json as transformers' LlamaConverter writes one
// pieces: <unk> <s> </s>, the 256 bytes <0xXX>, then the tapegrad BPE's
// pieces that are whole UTF-8 text, spaces as U+2581, score -rank
const bpeJson = JSON.parse(fs.readFileSync(path.join(work, 'hf_bpe_gpt', 'tokenizer.json'), 'utf8'));
const standIn = {};
{
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const self = (b >= 33 && b <= 126) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    standIn[String.fromCodePoint(self ? b : 256 + n++)] = b;
  }
}
const pieces = [];
const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
for (const [k, id] of Object.entries(bpeJson.model.vocab).sort((a, b) => a[1] - b[1])) {
  if (id < 3) continue;
  try {
    const p = dec.decode(Uint8Array.from(Array.from(k).map((c) => standIn[c]))).replace(/ /g, '\u2581');
    if (!pieces.includes(p) && !/[\u0000-\u001f]/.test(p)) pieces.push(p);   // control characters are byte pieces
  } catch (e) { /* part of a character */ }
}
const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
for (let b = 0; b < 256; b++) vocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = 3 + b;
for (const p of pieces) if (!(p in vocab)) vocab[p] = Object.keys(vocab).length;
if (!('\u2581' in vocab)) vocab['\u2581'] = Object.keys(vocab).length;
const nVocab = Object.keys(vocab).length;
// the converter: for each piece in score order, every split into two pieces (by characters),
// sorted by the halves' ids; the pieces' groups in score order (here id order)
const merges = [];
for (const [p, id] of Object.entries(vocab).sort((a, b) => a[1] - b[1])) {
  if (id < 259) continue;
  const cs = Array.from(p), local = [];
  for (let i = 1; i < cs.length; i++) {
    const l = cs.slice(0, i).join(''), r = cs.slice(i).join('');
    if (l in vocab && r in vocab && vocab[l] >= 259 && vocab[r] >= 259) local.push([l, r]);
  }
  local.sort((a, b) => vocab[a[0]] - vocab[b[0]] || vocab[a[1]] - vocab[b[1]]);
  merges.push(...local.map(([l, r]) => l + ' ' + r));
}
const added = ['<unk>', '<s>', '</s>'].map((c, i) => ({ id: i, content: c, single_word: false, lstrip: false, rstrip: false,
                                                      normalized: false, special: true }));
const llamaJson = {
  version: '1.0', truncation: null, padding: null, added_tokens: added,
  normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '\u2581' },
                                                { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] },
  pre_tokenizer: null,
  post_processor: { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
                    pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
                           { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
                    special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
  decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' },
                                         { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
  model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges },
};
function llamaDir(name, json) {
  const dir = path.join(work, name);
  fs.mkdirSync(dir);
  const cfg = JSON.parse(fs.readFileSync(path.join(work, 'hf_bpe_llama', 'config.json'), 'utf8'));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));   // vocab_size 1200 >= the pieces
  fs.copyFileSync(path.join(work, 'hf_bpe_llama', 'model.safetensors'), path.join(dir, 'model.safetensors'));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
  return dir;
}
{
  const dir = llamaDir('spm_llama', llamaJson), ck = path.join(work, 'spm.safetensors');
  const out = q(['import', '--format', 'hf', '--model', dir, '--out', ck]);
  cases.push({ name: 'spm_import', dir, special: true, marks: true, who: [['the import', (s) => [1, ...encode(ck, s)]]] });
  const dir2 = path.join(work, 'spm_export'), ck2 = path.join(work, 'spm2.safetensors');
  q(['export', '--format', 'hf', '--ckpt', ck, '--out', dir2]);
  q(['import', '--format', 'hf', '--model', dir2, '--out', ck2]);
  const dir3 = path.join(work, 'spm_export2');
  q(['export', '--format', 'hf', '--ckpt', ck2, '--out', dir3]);
  const same = fs.readFileSync(path.join(dir2, 'tokenizer.json')).equals(fs.readFileSync(path.join(dir3, 'tokenizer.json')));
  console.log(`${same ? 'ok' : 'FAIL'} spm_export: the import of the export exports the same tokenizer.json ` +
              `(${nVocab} pieces, ${merges.length} merges; import said "${out.trim().split('\n').pop()}")`);
  same ? passed++ : failed++;
  cases.push({ name: 'spm_export', dir: dir2, special: true, marks: true, who: [['its import', (s) => [1, ...encode(ck2, s)]]] });
  // llama2.c's own kind of tokenizer.bin (pieces with ' ' for spaces, <0xXX> bytes, scores; run.c's
  // merge floor), the same pieces padded to the model's 1200 ids, imported with a model.bin
  const tb = [], bpeLlama = path.join(work, 'bpe_llama', 'last.safetensors');
  const ordered = Object.entries(vocab).sort((x, y) => x[1] - y[1]).map(([p]) => p.replace(/\u2581/g, ' '));
  for (let i = ordered.length; i < 1200; i++) ordered.push(`<pad ${i}>`);
  let maxLen = 0;
  const ent = ordered.map((p, i) => {
    const b = i === 1 ? Buffer.from('\n<s>\n') : i === 2 ? Buffer.from('\n</s>\n') : Buffer.from(p, 'utf8');
    maxLen = Math.max(maxLen, b.length);
    const h = Buffer.alloc(8);
    h.writeFloatLE(i < 259 ? 0 : i < nVocab ? -(i - 259) : -1e11, 0);
    h.writeInt32LE(b.length, 4);
    return Buffer.concat([h, b]);
  });
  const hdr = Buffer.alloc(4);
  hdr.writeInt32LE(maxLen, 0);
  const tokBin = path.join(work, 'llama2c_tokenizer.bin'), modelBin = path.join(work, 'llama2c_model.bin');
  fs.writeFileSync(tokBin, Buffer.concat([hdr, ...ent]));
  q(['export', '--ckpt', bpeLlama, '--format', 'llama2c', '--out', modelBin]);
  const ck5 = path.join(work, 'l2c.safetensors'), dir5 = path.join(work, 'l2c_export'), ck6 = path.join(work, 'l2c_back.safetensors');
  q(['import', '--format', 'llama2c', '--model', modelBin, '--tokenizer', tokBin, '--out', ck5]);
  q(['export', '--format', 'hf', '--ckpt', ck5, '--out', dir5]);
  q(['import', '--format', 'hf', '--model', dir5, '--out', ck6]);
  cases.push({ name: 'spm_llama2c', dir: dir5, special: true, who: [['the llama2.c import', (s) => [1, ...encode(ck5, s)]],
                                                                    ['its HF import', (s) => [1, ...encode(ck6, s)]]] });
  const meta = JSON.parse(JSON.stringify(llamaJson));
  meta.normalizer = null;
  meta.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };
  const dir4 = llamaDir('spm_metaspace', meta), ck4 = path.join(work, 'spm4.safetensors');
  const r = spawnSync(bin, ['import', '--format', 'hf', '--model', dir4, '--out', ck4]);
  const said = r.status === 0 ? r.stderr.toString() : `failed: ${r.stderr}`;
  const noticed = /notice: .*Metaspace/.test(said);
  console.log(`${noticed ? 'ok' : 'FAIL'} metaspace: the import says what differs: ${said.trim().split('\n').pop()}`);
  noticed ? passed++ : failed++;
  cases.push({ name: 'metaspace', dir: dir4, special: true, skip: (s) => /^\s/.test(s),
               who: [['the import', (s) => [1, ...encode(ck4, s)]]] });
}

// ---- compare, case by case, section by section
(async () => {
  for (const c of cases) {
    const tok = Tokenizer.fromString(fs.readFileSync(path.join(c.dir, 'tokenizer.json'), 'utf8'));
    const who = c.who;
    if (c.back) {   // a byte vocabulary: its import holds the same vocabulary
      const [a, b] = [c.ckpt, c.back].map((f) => {
        const buf = fs.readFileSync(f), n = Number(buf.readBigUInt64LE(0));
        return JSON.parse(buf.subarray(8, 8 + n).toString()).__metadata__.vocab;
      });
      console.log(`${a === b ? 'ok' : 'FAIL'} ${c.name}: the import's vocabulary is the checkpoint's (${a.slice(0, 40)})`);
      a === b ? passed++ : failed++;
    }
    for (const [name, s0] of sections) {
      const s = c.cut ? c.cut(s0) : s0;
      if (c.skip && c.skip(s)) continue;
      const want = Array.from((await tok.encode(s, null, { addSpecialTokens: c.special })).getIds());
      for (const [w, f] of who) {
        let got;
        try { got = f(s); } catch (e) { got = ['error: ' + String(e.stderr || e).trim().split('\n').pop()]; }
        let i = 0;
        while (i < want.length && i < got.length && want[i] === got[i]) i++;
        if (i === want.length && i === got.length) {
          console.log(`ok ${c.name} ${name} (tapegrad with ${w}): ${Buffer.byteLength(s)} bytes, ${got.length} ids equal`);
          passed++;
        } else {
          console.log(`FAIL ${c.name} ${name} (tapegrad with ${w}): ids differ at ${i} of ${want.length} (tokenizers) / ` +
                      `${got.length} (tapegrad): ${want.slice(Math.max(0, i - 3), i + 4).join(' ')} vs ` +
                      `${got.slice(Math.max(0, i - 3), i + 4).join(' ')}`);
          failed++;
        }
      }
    }
  }
  // decode(encode(text)) is the text again, with and without a leading space, as transformers' tokenizers
  // give it (a Prepend(' ') normalizer's space dropped by the decoder; U+2581 in the text of pieces that spell
  // spaces so comes back a space, in transformers' Llama too)
  for (const c of cases) {
    if (c.skip) continue;   // Metaspace: the text's own leading space is taken for its prefix
    const tok = Tokenizer.fromString(fs.readFileSync(path.join(c.dir, 'tokenizer.json'), 'utf8'));
    const texts = [];
    for (const [name, s0] of [['First Citizen:', 'First Citizen:'], ...sections]) {
      const s = (c.cut ? c.cut(s0) : s0).replace(/^\s+/u, '');
      texts.push([name, head(s, 20000)]);
    }
    for (const [name, s] of texts)
      for (const t of [s, ' ' + s]) {
        const back = await tok.decode(Array.from((await tok.encode(t, null, { addSpecialTokens: c.special })).getIds()), true);
        const want = c.marks ? t.replace(/\u2581/g, ' ') : t;
        let i = 0;
        while (i < want.length && want[i] === back[i]) i++;
        const ok = back === want, what = t === s ? 'no leading space' : 'a leading space';
        console.log(`${ok ? 'ok' : 'FAIL'} ${c.name} ${name} decodes back (${what}): ` +
                    (ok ? `${want.length} characters` : `differs at ${i}: ${JSON.stringify(back.slice(Math.max(0, i - 5), i + 10))} ` +
                     `vs ${JSON.stringify(want.slice(Math.max(0, i - 5), i + 10))}`));
        ok ? passed++ : failed++;
      }
  }
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed (tokenizers ${require(path.join(modules, 'tokenizers', 'package.json')).version})`);
  process.exit(failed ? 1 : 0);
})();
