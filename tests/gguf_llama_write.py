#!/usr/bin/env python3
"""Llama GGUF files written by gguf-py (llama.cpp's own Python writer), for
`tiny_gpt import --format gguf` to read (tests/gguf_import.js), and the
check of what it read.

    python3 tests/gguf_llama_write.py write GGUF_PY_DIR OUT_DIR
        writes OUT_DIR/mixed.gguf: an untied Llama with grouped-query
        attention whose matrices are F32, F16, BF16 and Q8_0 (the norms
        F32), with a SentencePiece-style vocabulary (<unk>, <s>, </s>,
        256 byte pieces <0xXX>, then characters and merges with scores,
        spaces spelled U+2581, add_space_prefix); and OUT_DIR/tied.gguf: a
        tied Llama (no output tensor), every tensor F32, another rope
        freq base and eps, the same vocabulary without add_space_prefix.
        Random weights from a fixed seed. Also OUT_DIR/gpt2.gguf: a GPT
        (architecture gpt2, biases, no output tensor: the tied head) whose
        matrices are F32, F16, BF16 and Q8_0, with a GPT-2-style byte-level
        BPE (tokenizer.ggml.model gpt2: 256 byte tokens, merges,
        <|endoftext|>, pre-tokenizer gpt-2, no BOS).
    python3 tests/gguf_llama_write.py vocab GGUF_PY_DIR A.gguf B.gguf
        every tokenizer.* key of A and B must hold the same values (the
        export of an import writes the file's vocabulary back as it was).
    python3 tests/gguf_llama_write.py check GGUF_PY_DIR FILE.gguf CKPT.safetensors
        each tensor of the checkpoint must equal, bit for bit, gguf-py's
        dequantization of the file's tensor of the same role (float32),
        and the config the file's keys; prints one line, exits 1 otherwise.
"""
import json
import struct
import sys

sys.path.insert(0, sys.argv[2])
import numpy as np  # noqa: E402
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType as Q, TokenType, quants  # noqa: E402

NAMES = {  # GGUF's name -> tapegrad's (per layer after "blk.N." / "layers.N.")
    'token_embd.weight': 'tok_embeddings.weight', 'output_norm.weight': 'norm.weight', 'output.weight': 'output.weight',
    'attn_norm.weight': 'attention_norm.weight', 'attn_q.weight': 'attention.wq.weight',
    'attn_k.weight': 'attention.wk.weight', 'attn_v.weight': 'attention.wv.weight',
    'attn_output.weight': 'attention.wo.weight', 'ffn_norm.weight': 'ffn_norm.weight',
    'ffn_gate.weight': 'feed_forward.w1.weight', 'ffn_down.weight': 'feed_forward.w2.weight',
    'ffn_up.weight': 'feed_forward.w3.weight'}

GPT2_NAMES = {  # llama.cpp's gpt2 name -> tapegrad's (per layer after "blk.N." / "transformer.h.N.")
    'token_embd.weight': 'transformer.wte.weight', 'position_embd.weight': 'transformer.wpe.weight',
    'output_norm.weight': 'transformer.ln_f.weight', 'output_norm.bias': 'transformer.ln_f.bias',
    **{f'{g}.{wb}': f'{t}.{wb}' for g, t in (('attn_norm', 'ln_1'), ('attn_qkv', 'attn.c_attn'),
                                              ('attn_output', 'attn.c_proj'), ('ffn_norm', 'ln_2'),
                                              ('ffn_up', 'mlp.c_fc'), ('ffn_down', 'mlp.c_proj'))
       for wb in ('weight', 'bias')}}

# GPT-2-style pieces past the bytes (as text), in rank order; each one's merge is the split tiktoken's
# rule makes of it with the lower ranks (as GPT-2's own merges are), so llama.cpp's merges and tiktoken's
# ranks encode alike
GPT2_PIECES = [' t', 'he', ' the', ' a', 'in', 'nd', ' and', 'ing', 'er', 'on', ' o', ' on', 'at', ' c', ' cat', ' w',
               'it', 'hat', ' h', ' hat', 'is', ' i', ' is', 'en', 'th', ' th', ' this', '\n\n', '  ', '   ', '.\n',
               ' wit', ' with', 'The', 'ou', 'st', 'ar', 'es', 'of', ' of']


def tiktoken_split(piece, ranks):
    """The two pieces tiktoken's rule leaves of piece's bytes with the ranks below piece's."""
    parts, limit = [bytes([b]) for b in piece], ranks[piece]
    while len(parts) > 2:
        best = min(((ranks.get(parts[k] + parts[k + 1], limit), k) for k in range(len(parts) - 1)))
        assert best[0] < limit, f'{piece!r} is no merge of lower pieces'
        parts[best[1]:best[1] + 2] = [parts[best[1]] + parts[best[1] + 1]]
    return parts


def gpt2_vocabulary():
    keep = list(range(ord('!'), ord('~') + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    stand = {}
    n = 0
    for b in range(256):
        stand[b] = chr(b) if b in keep else chr(256 + n)
        n += b not in keep
    spell = lambda s: ''.join(stand[b] for b in s)  # noqa: E731
    ranks = {bytes([b]): b for b in range(256)}
    toks, merges = [stand[b] for b in range(256)], []
    for p in GPT2_PIECES:
        p = p.encode()
        assert p not in ranks, f'{p!r} twice'
        ranks[p] = len(ranks)
        a, b = tiktoken_split(p, ranks)
        merges.append(f'{spell(a)} {spell(b)}'), toks.append(spell(p))
    toks.append('<|endoftext|>')
    types = [TokenType.NORMAL] * (len(toks) - 1) + [TokenType.CONTROL]
    return toks, merges, types


def write_gpt2(out, rng):
    toks, merges, types = gpt2_vocabulary()
    V, C, H, L, T = len(toks), 64, 4, 2, 64
    w = GGUFWriter(f'{out}/gpt2.gguf', 'gpt2')
    w.add_context_length(T), w.add_embedding_length(C), w.add_block_count(L), w.add_feed_forward_length(4 * C)
    w.add_head_count(H), w.add_layer_norm_eps(1e-5)
    w.add_tokenizer_model('gpt2'), w.add_tokenizer_pre('gpt-2'), w.add_token_list(toks), w.add_token_types(types)
    w.add_token_merges(merges), w.add_bos_token_id(V - 1), w.add_eos_token_id(V - 1), w.add_add_bos_token(False)
    kinds = [Q.F32, Q.F16, Q.BF16, Q.Q8_0]
    k = 0

    def add(gname, shape):
        nonlocal k
        x = (rng.standard_normal(shape) * (0.15 if len(shape) == 2 else 0.1) +
             (1 if gname.endswith('norm.weight') else 0)).astype(np.float32)
        q = kinds[k % len(kinds)] if len(shape) == 2 else Q.F32
        k += len(shape) == 2
        w.add_tensor(gname, x) if q == Q.F32 else w.add_tensor(gname, quants.quantize(x, q), raw_dtype=q)
    add('token_embd.weight', (V, C)), add('position_embd.weight', (T, C))
    for layer in range(L):
        for g, rows, cols in (('attn_norm', C, 0), ('attn_qkv', 3 * C, C), ('attn_output', C, C), ('ffn_norm', C, 0),
                              ('ffn_up', 4 * C, C), ('ffn_down', C, 4 * C)):
            add(f'blk.{layer}.{g}.weight', (rows, cols) if cols else (rows,))
            add(f'blk.{layer}.{g}.bias', (rows,))
    add('output_norm.weight', (C,)), add('output_norm.bias', (C,))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    print(f'wrote {out}/gpt2.gguf ({V} ids, {len(merges)} merges)')


MERGES = ['th', 'he', 'the', 'in', 'an', 'er', 'on', 're', 'and', 'ing', 'ou', 'st', 'en', 'at', 'es', 'is', 'it', 'or',
          'ar', 'to', 'of', 'ed', 'll', 'ha', 'hi', 'se', 'ne', 've', 'me', 'be', 'wh', 'that', 'you', 'this', 'with']


def vocabulary():
    toks, scores, types = ['<unk>', '<s>', '</s>'], [0.0, 0.0, 0.0], [TokenType.UNKNOWN, TokenType.CONTROL,
                                                                     TokenType.CONTROL]
    for b in range(256):
        toks.append(f'<0x{b:02X}>'), scores.append(0.0), types.append(TokenType.BYTE)
    chars = list('\u2581etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ.,;:!?\'"-0123456789\n()é日本')
    for c in chars:   # characters score below every merge, as sentencepiece's
        toks.append(c), scores.append(-1000.0 - len(toks)), types.append(TokenType.NORMAL)
    for i, m in enumerate(MERGES):   # each also after a space: ▁m
        for p in (m, '\u2581' + m):
            toks.append(p), scores.append(-float(i) - (0.5 if p[0] == '\u2581' else 0)), types.append(TokenType.NORMAL)
    toks.append('\u2581\u2581'), scores.append(-40.0), types.append(TokenType.NORMAL)
    return toks, scores, types


def write(gguf_py, out):
    rng = np.random.default_rng(1234)
    toks, scores, types = vocabulary()
    V = len(toks)
    for name, tied in (('mixed', False), ('tied', True)):
        C, H, KV, F, L, T = 64, 4, 2 if not tied else 4, 96, 2, 64
        w = GGUFWriter(f'{out}/{name}.gguf', 'llama')
        w.add_context_length(T), w.add_embedding_length(C), w.add_block_count(L), w.add_feed_forward_length(F)
        w.add_head_count(H), w.add_head_count_kv(KV), w.add_rope_dimension_count(C // H)
        w.add_layer_norm_rms_eps(1e-5 if not tied else 1e-6)
        w.add_rope_freq_base(10000.0 if not tied else 500000.0)
        w.add_tokenizer_model('llama'), w.add_token_list(toks), w.add_token_scores(scores), w.add_token_types(types)
        w.add_bos_token_id(1), w.add_eos_token_id(2), w.add_unk_token_id(0), w.add_add_bos_token(True)
        w.add_add_space_prefix(not tied)
        kinds = [Q.F32, Q.F16, Q.BF16, Q.Q8_0] if not tied else [Q.F32]

        def add(gname, shape, k):
            x = (rng.standard_normal(shape) * (0.15 if len(shape) == 2 else 0.1) + (1 if len(shape) == 1 else 0))
            x = x.astype(np.float32)
            q = kinds[k % len(kinds)] if len(shape) == 2 else Q.F32
            if q == Q.F32:
                w.add_tensor(gname, x)
            else:
                w.add_tensor(gname, quants.quantize(x, q), raw_dtype=q)
        add('token_embd.weight', (V, C), 3)
        k = 0
        for layer in range(L):
            hd = C // H
            for g, shape in (('attn_norm', (C,)), ('attn_q', (C, C)), ('attn_k', (KV * hd, C)),
                             ('attn_v', (KV * hd, C)), ('attn_output', (C, C)), ('ffn_norm', (C,)),
                             ('ffn_gate', (F, C)), ('ffn_down', (C, F)), ('ffn_up', (F, C))):
                add(f'blk.{layer}.{g}.weight', shape, k)
                k += 1
        add('output_norm.weight', (C,), 0)
        if not tied:
            add('output.weight', (V, C), 2)
        w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    print(f'wrote {out}/mixed.gguf and {out}/tied.gguf ({V} ids, {len(toks)} pieces)')
    write_gpt2(out, rng)


def safetensors(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop('__metadata__', {})
    out = {}
    for k, v in h.items():   # the weights (the tokenizer's entries are other dtypes)
        if v['dtype'] not in ('F32', 'F64'):
            continue
        s, e = v['data_offsets']
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype={'F32': np.float32, 'F64': np.float64}[v['dtype']]) \
            .reshape(v['shape'])
    return out, meta


def check(path, ckpt):
    r = GGUFReader(path)
    got, meta = safetensors(ckpt)
    field = lambda k: r.fields[k].parts[r.fields[k].data[0]][0]  # noqa: E731
    if bytes(r.fields['general.architecture'].parts[-1]) == b'gpt2':
        return check_gpt2(path, r, got, meta, field)
    want_cfg = {'n_embd': field('llama.embedding_length'), 'hidden_dim': field('llama.feed_forward_length'),
                'n_layer': field('llama.block_count'), 'n_head': field('llama.attention.head_count'),
                'n_kv_head': field('llama.attention.head_count_kv'), 'block_size': field('llama.context_length')}
    bad = [f'{k} {meta.get(k)} != {v}' for k, v in want_cfg.items() if meta.get(k) != str(int(v))]
    for key, fk in (('norm_eps', 'llama.attention.layer_norm_rms_epsilon'), ('rope_theta', 'llama.rope.freq_base')):
        if float(meta.get(key, 'nan')) != float(field(fk)):
            bad.append(f'{key} {meta.get(key)} != {field(fk)}')
    n = 0
    for t in r.tensors:
        name = t.name
        if name.startswith('blk.'):
            _, layer, rest = name.split('.', 2)
            ours = f'layers.{layer}.{NAMES[rest]}'
        else:
            ours = NAMES[name]
        want = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(
            [int(d) for d in reversed(t.shape)])
        if ours not in got:
            bad.append(f'{ours} missing')
        elif got[ours].dtype != np.float32 or got[ours].shape != want.shape or \
                not np.array_equal(got[ours].view(np.uint32), want.view(np.uint32)):
            bad.append(f'{ours} ({t.tensor_type.name}) differs')
        else:
            n += 1
    if ('output.weight' in got) != any(t.name == 'output.weight' for t in r.tensors):
        bad.append('the head is tied in one and not the other')
    if bad:
        print(f'FAIL {path}: ' + '; '.join(bad[:6]))
        sys.exit(1)
    kinds = sorted({t.tensor_type.name for t in r.tensors})
    print(f'ok {path}: its {n} tensors ({", ".join(kinds)}) are gguf-py\'s dequantization bit for bit, and the config '
          'its keys')


def check_gpt2(path, r, got, meta, field):
    want_cfg = {'n_embd': field('gpt2.embedding_length'), 'n_layer': field('gpt2.block_count'),
                'n_head': field('gpt2.attention.head_count'), 'block_size': field('gpt2.context_length')}
    bad = [f'{k} {meta.get(k)} != {v}' for k, v in want_cfg.items() if meta.get(k) != str(int(v))]
    if meta.get('arch', 'gpt') != 'gpt' or meta.get('gelu') != 'tanh' or meta.get('bias') != 'true':
        bad.append(f'arch {meta.get("arch")}, gelu {meta.get("gelu")}, bias {meta.get("bias")}: not a tanh GPT '
                   'with biases')
    n = 0
    for t in r.tensors:
        if t.name.startswith('blk.'):
            _, layer, rest = t.name.split('.', 2)
            ours = f'transformer.h.{layer}.{GPT2_NAMES[rest]}'
        else:
            ours = GPT2_NAMES[t.name]
        want = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(
            [int(d) for d in reversed(t.shape)])
        if ours not in got:
            bad.append(f'{ours} missing')
        elif got[ours].dtype != np.float32 or got[ours].shape != want.shape or \
                not np.array_equal(got[ours].view(np.uint32), want.view(np.uint32)):
            bad.append(f'{ours} ({t.tensor_type.name}) differs')
        else:
            n += 1
    if bad:
        print(f'FAIL {path}: ' + '; '.join(bad[:6]))
        sys.exit(1)
    kinds = sorted({t.tensor_type.name for t in r.tensors})
    print(f'ok {path}: its {n} tensors ({", ".join(kinds)}) are gguf-py\'s dequantization bit for bit, and the config '
          'its keys (a tanh GPT with biases)')


def same_vocab(a, b):
    def fields(path):
        r = GGUFReader(path)
        return {k: [bytes(f.parts[i]) for i in f.data] for k, f in r.fields.items() if k.startswith('tokenizer.')}
    x, y = fields(a), fields(b)
    bad = sorted(set(x) ^ set(y)) + [k for k in x if k in y and x[k] != y[k]]
    if bad:
        print(f'FAIL {b}: tokenizer keys differ from {a}: {", ".join(bad[:6])}')
        sys.exit(1)
    print(f'ok {b}: its {len(x)} tokenizer keys ({len(x["tokenizer.ggml.tokens"])} tokens) are {a}\'s')


if sys.argv[1] == 'write':
    write(sys.argv[2], sys.argv[3])
elif sys.argv[1] == 'vocab':
    same_vocab(sys.argv[3], sys.argv[4])
else:
    check(sys.argv[3], sys.argv[4])
