#!/usr/bin/env node
// The reference tokenizers' side of bench/tokenizers.py: OpenAI's tiktoken
// and Hugging Face's tokenizers, through their npm packages (Rust compiled
// to WebAssembly and to a native Node addon), one JSON line per command.
//
//   node bench/tokenizers_ref.js tiktoken-encode MODULES TEXT REPEATS [IDS_OUT]
//   node bench/tokenizers_ref.js hf-encode MODULES TOKENIZER.json TEXT REPEATS [IDS_OUT]
//   node bench/tokenizers_ref.js hf-train MODULES TEXT
//   node bench/tokenizers_ref.js hf-gpt2-json MODULES RANKS.tiktoken OUT.json
//
// Encoding is timed on the text already in memory as a string (reading
// and decoding the file is not timed), best of REPEATS. tiktoken encodes
// the whole text at once (encode_ordinary); Hugging Face's encode takes
// one string per call and builds offsets for every token, so the text goes
// in pieces of about 64 KB cut before a space that follows an ASCII
// non-space and precedes an ASCII letter (where both tapegrad's word rule
// and GPT-2's regex must start a word, so the ids are the whole text's).
// hf-train runs the binding's train(), which only takes the model's
// default trainer (BpeTrainer: vocabulary 30000, min_frequency 0), on a
// BPE model with the ByteLevel pre-tokenizer (GPT-2's regex, bytes as
// characters). hf-gpt2-json writes GPT-2 as a tokenizer.json, its merges
// recovered from the ranks (each piece is split by merging its bytes with
// the ranks below its own: exactly two parts remain).
'use strict';
const fs = require('fs');
const path = require('path');

const [cmd, modules, ...args] = process.argv.slice(2);
const need = (name) => require(path.resolve(modules, name));
const now = () => Number(process.hrtime.bigint()) / 1e9;

function cuts(text, size) {
  const out = [];
  let at = 0;
  while (at < text.length) {
    let p = Math.min(text.length, at + size);
    while (p < text.length - 1 &&
           !(text[p] === ' ' && /[!-~]/.test(text[p - 1]) && /[A-Za-z]/.test(text[p + 1]))) p++;
    if (p >= text.length - 1) p = text.length;
    out.push(text.slice(at, p));
    at = p;
  }
  return out;
}

function report(obj, ids, idsOut) {
  if (idsOut) fs.writeFileSync(idsOut, ids.join('\n') + '\n');
  console.log(JSON.stringify(obj));
}

async function main() {
  if (cmd === 'tiktoken-encode') {
    const [file, repeats, idsOut] = args;
    const { get_encoding } = need('tiktoken');
    const enc = get_encoding('gpt2');
    const bytes = fs.readFileSync(file);
    const text = bytes.toString('utf8');
    let best = Infinity, ids;
    for (let r = 0; r < Number(repeats); r++) {
      const t0 = now();
      ids = enc.encode_ordinary(text);
      best = Math.min(best, now() - t0);
    }
    enc.free();
    report({ what: 'encode', impl: 'tiktoken', version: need('tiktoken/package.json').version, bytes: bytes.length,
             tokens: ids.length, best_seconds: best, mb_per_s: bytes.length / 1e6 / best }, Array.from(ids), idsOut);
  } else if (cmd === 'hf-encode') {
    const [json, file, repeats, idsOut] = args;
    const { Tokenizer } = need('tokenizers');
    const tok = Tokenizer.fromString(fs.readFileSync(json, 'utf8'));
    const bytes = fs.readFileSync(file);
    const pieces = cuts(bytes.toString('utf8'), 1 << 16);
    let best = Infinity, ids;
    for (let r = 0; r < Number(repeats); r++) {
      ids = [];
      const t0 = now();
      for (const p of pieces) {
        const e = await tok.encode(p, null, { addSpecialTokens: false });
        for (const id of e.getIds()) ids.push(id);
      }
      best = Math.min(best, now() - t0);
    }
    report({ what: 'encode', impl: 'hf-tokenizers', version: need('tokenizers/package.json').version,
             bytes: bytes.length, tokens: ids.length, best_seconds: best, mb_per_s: bytes.length / 1e6 / best },
           ids, idsOut);
  } else if (cmd === 'hf-train') {
    const [file] = args;
    const { Tokenizer, BPE, byteLevelPreTokenizer } = need('tokenizers');
    const tok = new Tokenizer(BPE.empty());
    tok.setPreTokenizer(byteLevelPreTokenizer(false, true));
    const t0 = now();
    tok.train([file]);
    const seconds = now() - t0;
    console.log(JSON.stringify({ what: 'train', impl: 'hf-tokenizers', version: need('tokenizers/package.json').version,
                                 bytes: fs.statSync(file).size, vocab: tok.getVocabSize(), seconds }));
  } else if (cmd === 'hf-gpt2-json') {
    const [ranksFile, out] = args;
    const ranks = new Map(), pieces = [];
    for (const line of fs.readFileSync(ranksFile, 'utf8').split('\n')) {
      if (!line) continue;
      const [b64, r] = line.split(' ');
      const s = Buffer.from(b64, 'base64').toString('latin1');
      ranks.set(s, Number(r));
      pieces[Number(r)] = s;
    }
    // GPT-2's bytes_to_unicode
    const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const map = [];
    for (let b = 0, k = 0; b < 256; b++) map[b] = String.fromCodePoint(printable(b) ? b : 256 + k++);
    const show = (s) => Array.from(s, (c) => map[c.charCodeAt(0)]).join('');
    const vocab = {}, merges = [];
    pieces.forEach((s, r) => { vocab[show(s)] = r; });
    for (let r = 0; r < pieces.length; r++) {
      const s = pieces[r];
      if (s.length < 2) continue;
      let parts = Array.from(s);
      for (;;) {
        let best = -1, at = -1;
        for (let i = 0; i + 1 < parts.length; i++) {
          const q = ranks.get(parts[i] + parts[i + 1]);
          if (q !== undefined && q < r && (best < 0 || q < best)) { best = q; at = i; }
        }
        if (at < 0) break;
        parts.splice(at, 2, parts[at] + parts[at + 1]);
      }
      if (parts.length !== 2) throw new Error(`rank ${r}: its bytes merge into ${parts.length} parts, not 2`);
      merges.push([show(parts[0]), show(parts[1])]);
    }
    const json = {
      version: '1.0', truncation: null, padding: null,
      added_tokens: [{ id: pieces.length, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
                       normalized: false, special: true }],
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: null,
      decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
               fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
    };
    fs.writeFileSync(out, JSON.stringify(json));
    console.log(JSON.stringify({ what: 'hf-gpt2-json', out, merges: merges.length }));
  } else {
    console.error('usage: see the comment at the top of bench/tokenizers_ref.js');
    process.exit(2);
  }
}
main().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
