#!/usr/bin/env python3
"""Tokenizers side by side: tapegrad's BPE trainer and encoders against
SentencePiece (Debian's `sentencepiece`: spm_train, spm_encode), Hugging
Face tokenizers and OpenAI's tiktoken (their npm packages, driven by
bench/tokenizers_ref.js). Prints three markdown tables (training time,
encoding speed and bytes per token at one vocabulary, GPT-2 encoding) and
writes every raw figure to WORK/results.json.

    /usr/bin/python3 bench/tokenizers.py --build build
    /usr/bin/python3 bench/tokenizers.py --build build --quick     # 1 MB and 5 MB, vocab 512, one repeat

Texts: tinyshakespeare (--data) and a large text made of copies of it
(--large-mb, 50 by default). Everything runs on one thread
(OPENBLAS_NUM_THREADS, RAYON_NUM_THREADS=1, spm_train --num_threads 1),
plus tapegrad on --threads 2 for a second column. Times are the best of
--repeats runs, taken one after another: run it on a quiet machine.

Settings, so that the sides do the same work:
- SentencePiece: --model_type=bpe --byte_fallback=true --vocab_size=N
  --character_coverage=1.0 --max_sentence_length=1000000 (no line is
  skipped) --num_threads=1, otherwise its defaults (it removes extra
  whitespace and splits at script and digit changes). It reads the file
  line by line and never sees the newlines, so its tokens are counted as
  its ids plus one per line (the newline a model of the text must emit);
  its time includes reading the file. Vocabulary sizes it refuses (larger
  than its text allows) are shown as such.
- Hugging Face: encoding with tapegrad's own vocabulary loaded into its
  BPE model (bench_tokenizer hf-json: the same words, the same merges),
  and with GPT-2's; training with the only trainer its Node binding runs,
  the default (BpeTrainer, 30000 ids, ByteLevel pre-tokenizer).
- tiktoken: GPT-2's encoding, encode_ordinary on the whole text.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, env=None):
    """Runs cmd, returns (stdout, seconds); raises with stderr on failure."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout, dt


def last_json(out):
    return json.loads([l for l in out.splitlines() if l.startswith('{')][-1])


def count_ids(path):
    with open(path) as f:
        return sum(len(line.split()) for line in f)


def same_ids(a, b):
    with open(a) as fa, open(b) as fb:
        return fa.read().split() == fb.read().split()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', default='build')
    shared = [os.path.join(ROOT, *up, 'shared', 'data', 'tinyshakespeare.txt') for up in (['..'], ['..', '..'])]
    ap.add_argument('--data', default=next((p for p in shared if os.path.exists(p)), shared[0]),
                    help='the text (default: ../shared/data/tinyshakespeare.txt beside the checkout)')
    ap.add_argument('--large-mb', type=float, default=50)
    ap.add_argument('--vocab', default='512,4096,32000')
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--modules', default=os.environ.get('TAPEGRAD_NODE_MODULES', os.path.join(HERE, 'node_modules')))
    ap.add_argument('--work', default=None, help='scratch directory (default BUILD/bench_tokenizers)')
    ap.add_argument('--quick', action='store_true', help='1 MB and 5 MB texts, vocab 512, one repeat')
    args = ap.parse_args()
    if args.quick:
        args.large_mb, args.vocab, args.repeats = 5, '512', 1
    vocabs = [int(v) for v in args.vocab.split(',')]
    bench = os.path.join(args.build, 'bench', 'bench_tokenizer')
    ref = os.path.join(HERE, 'tokenizers_ref.js')
    work = args.work or os.path.join(args.build, 'bench_tokenizers')
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1', RAYON_NUM_THREADS='1', TOKENIZERS_PARALLELISM='false')
    node = shutil.which('node')
    have_node = node and os.path.exists(os.path.join(args.modules, 'tiktoken')) and \
        os.path.exists(os.path.join(args.modules, 'tokenizers'))
    have_spm = shutil.which('spm_train') and shutil.which('spm_encode')
    if not os.path.exists(bench):
        sys.exit(f'{bench} is missing: cmake --build {args.build} --target bench_tokenizer')
    missing = [n for n, ok in (('node + npm tiktoken/tokenizers in ' + args.modules, have_node),
                               ('spm_train/spm_encode', have_spm)) if not ok]
    if missing:
        print(f'(not found, columns left empty: {"; ".join(missing)}; scripts/reference-tools.sh installs them)')

    # the texts
    with open(args.data, 'rb') as f:
        small = f.read()
    texts = [('tinyshakespeare', args.data, len(small))]
    copies = max(1, round(args.large_mb * 1e6 / len(small)))
    large = os.path.join(work, f'shakespeare_x{copies}.txt')
    if not os.path.exists(large) or os.path.getsize(large) != copies * len(small):
        with open(large, 'wb') as f:
            for _ in range(copies):
                f.write(small)
    texts.append((f'{copies} copies ({copies * len(small) / 1e6:.0f} MB)', large, copies * len(small)))

    results = []
    rows_train, rows_enc, rows_gpt2 = [], [], []
    for name, path, size in texts:
        lines = open(path, 'rb').read().count(b'\n')
        for V in vocabs:
            tok = os.path.join(work, f'tg_{os.path.basename(path)}_{V}.safetensors')
            r = {'text': name, 'bytes': size, 'vocab': V}
            best = None
            for _ in range(args.repeats):
                j = last_json(run([bench, 'train', '--data', path, '--vocab-size', str(V), '--out', tok], env)[0])
                best = j if best is None or j['seconds'] < best['seconds'] else best
            r['tg_train_s'], r['tg_vocab'] = best['seconds'], best['vocab']
            j = last_json(run([bench, 'train', '--data', path, '--vocab-size', str(V), '--threads', '2'], env)[0])
            r['tg_train_2t_s'] = j['seconds']
            ids_tg = os.path.join(work, 'tg.ids')
            j = last_json(run([bench, 'encode', '--tokenizer', tok, '--data', path, '--repeats', str(args.repeats + 1),
                               '--ids', ids_tg], env)[0])
            r['tg_enc_mbs'], r['tg_tokens'] = j['mb_per_s'], j['tokens']
            j = last_json(run([bench, 'encode', '--tokenizer', tok, '--data', path, '--repeats', str(args.repeats + 1),
                               '--threads', '2'], env)[0])
            r['tg_enc_2t_mbs'] = j['mb_per_s']
            if have_spm:
                prefix = os.path.join(work, f'spm_{os.path.basename(path)}_{V}')
                try:
                    secs = []
                    for _ in range(args.repeats):
                        secs.append(run(['spm_train', '--input', path, '--model_prefix', prefix, '--model_type', 'bpe',
                                         '--byte_fallback', 'true', '--vocab_size', str(V), '--num_threads', '1',
                                         '--character_coverage', '1.0', '--max_sentence_length', '1000000',
                                         '--minloglevel', '2'], env)[1])
                    r['spm_train_s'] = min(secs)
                    ids_spm = os.path.join(work, 'spm.ids')
                    secs = []
                    for _ in range(args.repeats):
                        t0 = time.monotonic()
                        with open(path, 'rb') as fin, open(ids_spm, 'wb') as fout:
                            subprocess.run(['spm_encode', '--model', prefix + '.model', '--output_format', 'id'],
                                           stdin=fin, stdout=fout, check=True, env=env)
                        secs.append(time.monotonic() - t0)
                    r['spm_enc_mbs'] = size / 1e6 / min(secs)
                    r['spm_tokens'] = count_ids(ids_spm) + lines
                except RuntimeError as e:
                    r['spm_error'] = 'refused' if 'too high' in str(e) else str(e)[-200:]
            if have_node:
                hf = os.path.join(work, 'tg_vocab_hf.json')
                run([bench, 'hf-json', '--tokenizer', tok, '--out', hf], env)
                ids_hf = os.path.join(work, 'hf.ids')
                j = last_json(run([node, ref, 'hf-encode', args.modules, hf, path, str(args.repeats), ids_hf], env)[0])
                r['hf_enc_mbs'], r['hf_same_ids'] = j['mb_per_s'], same_ids(ids_tg, ids_hf)
            results.append(r)
            print(json.dumps(r), file=sys.stderr)
        if have_node:
            j = last_json(run([node, ref, 'hf-train', args.modules, path], env)[0])
            results.append({'text': name, 'hf_train_s': j['seconds'], 'hf_vocab': j['vocab']})
            print(json.dumps(results[-1]), file=sys.stderr)
            # GPT-2
            ranks = os.path.join(work, 'gpt2.tiktoken')
            if not os.path.exists(ranks):
                run([node, os.path.join(ROOT, 'scripts', 'gpt2-tiktoken.js'), args.modules, ranks], env)
            hf2 = os.path.join(work, 'gpt2_hf.json')
            if not os.path.exists(hf2):
                run([node, ref, 'hf-gpt2-json', args.modules, ranks, hf2], env)
            g = {'text': name, 'gpt2': True}
            ids_tg, ids_tt, ids_hf = (os.path.join(work, x) for x in ('g_tg.ids', 'g_tt.ids', 'g_hf.ids'))
            j = last_json(run([bench, 'encode', '--tokenizer', ranks, '--data', path, '--repeats', str(args.repeats + 1),
                               '--ids', ids_tg], env)[0])
            g['tg_mbs'], g['tokens'] = j['mb_per_s'], j['tokens']
            j = last_json(run([bench, 'encode', '--tokenizer', ranks, '--data', path, '--repeats', str(args.repeats + 1),
                               '--threads', '2'], env)[0])
            g['tg_2t_mbs'] = j['mb_per_s']
            j = last_json(run([node, ref, 'tiktoken-encode', args.modules, path, str(args.repeats), ids_tt], env)[0])
            g['tt_mbs'] = j['mb_per_s']
            j = last_json(run([node, ref, 'hf-encode', args.modules, hf2, path, str(args.repeats), ids_hf], env)[0])
            g['hf_mbs'] = j['mb_per_s']
            g['same_as_tiktoken'] = same_ids(ids_tg, ids_tt)
            g['hf_same_as_tiktoken'] = same_ids(ids_hf, ids_tt)
            results.append(g)
            print(json.dumps(g), file=sys.stderr)

    with open(os.path.join(work, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)

    f1 = lambda x, d=2: '-' if x is None else f'{x:.{d}f}'
    print('\n### Training time, seconds (1 thread unless said)\n')
    print('| text | ids asked (got) | tapegrad | tapegrad, 2 threads | SentencePiece | HF tokenizers (default trainer) |')
    print('| --- | --- | --- | --- | --- | --- |')
    hf_train = {r['text']: r for r in results if 'hf_train_s' in r}
    for r in (r for r in results if 'tg_train_s' in r):
        h = hf_train.get(r['text'])
        hf = f"{h['hf_train_s']:.2f} ({h['hf_vocab']} ids)" if h else '-'
        spm = r.get('spm_error') or f1(r.get('spm_train_s'))
        print(f"| {r['text']} | {r['vocab']} ({r['tg_vocab']}) | {f1(r['tg_train_s'], 3)} | {f1(r['tg_train_2t_s'], 3)} "
              f"| {spm} | {hf} |")
    print('\n### Encoding, MB/s at 1 thread, and bytes per token\n')
    print('| text | ids | tapegrad | tapegrad, 2 threads | SentencePiece | HF tokenizers, same vocabulary (same ids?) '
          '| bytes/token tapegrad | bytes/token SentencePiece | ratio |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for r in (r for r in results if 'tg_train_s' in r):
        bt = r['bytes'] / r['tg_tokens']
        bs = r['bytes'] / r['spm_tokens'] if r.get('spm_tokens') else None
        hf = f"{r['hf_enc_mbs']:.2f} ({'yes' if r['hf_same_ids'] else 'no'})" if 'hf_enc_mbs' in r else '-'
        print(f"| {r['text']} | {r['tg_vocab']} | {f1(r['tg_enc_mbs'], 1)} | {f1(r['tg_enc_2t_mbs'], 1)} "
              f"| {r.get('spm_error') or f1(r.get('spm_enc_mbs'))} | {hf} | {bt:.3f} | {f1(bs, 3)} "
              f"| {f1(bt / bs if bs else None, 3)} |")
    print('\n### GPT-2 encoding, MB/s at 1 thread\n')
    print('| text | tapegrad | tapegrad, 2 threads | tiktoken (npm, WebAssembly) | HF tokenizers | tapegrad ids = tiktoken ids |')
    print('| --- | --- | --- | --- | --- | --- |')
    for g in (g for g in results if g.get('gpt2')):
        print(f"| {g['text']} | {g['tg_mbs']:.1f} | {g['tg_2t_mbs']:.1f} | {g['tt_mbs']:.2f} | {g['hf_mbs']:.2f} "
              f"| {'yes' if g['same_as_tiktoken'] else 'NO'} ({g['tokens']} ids) |")


if __name__ == '__main__':
    main()
