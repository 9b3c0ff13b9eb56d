#!/usr/bin/env python3
"""Small GGUF files crafted byte by byte for the GGUF reader's fuzz seed
corpus (tests/fuzz/corpus/gguf/, replayed by CTest's fuzz_gguf): a tiny
Llama and a tiny GPT that import, and variants of them that must be
refused (a signed key below zero, a key or tensor named twice, tensors
sharing bytes or leaving a gap, a tensor missing or of another shape, a
token type that is none of GGUF's, an 'rwkv' token that is not one byte
or a special token named, a GPT's epsilon a float32 step from 1e-5).
Each file is a few KB at most. Nothing here needs gguf-py: it writes the
layout formats/gguf.c's top comment describes.

    python3 tests/gguf_edge_files.py OUT_DIR
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f', BOOL: '<?', U64: '<Q',
       I64: '<q', F64: '<d'}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b


def value(t, v):
    if t == STRING:
        return gstr(v)
    if t == ARRAY:
        elem, items = v
        body = b''.join(gstr(x) if elem == STRING else struct.pack(FMT[elem], x) for x in items)
        return struct.pack('<IQ', elem, len(items)) + body
    return struct.pack(FMT[t], v)


def gguf(kvs, tensors, offsets=None):
    """kvs: [(key, type, value)]; tensors: [(name, dims, data bytes)] as F32, laid out one after
    another unless offsets gives each one's."""
    out = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack('<I', t) + value(t, v)
    data, at = b'', []
    for _, _, d in tensors:
        at.append(len(data))
        data += d + b'\0' * ((32 - len(d) % 32) % 32)
    for i, (name, dims, _) in enumerate(tensors):
        out += gstr(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', x) for x in dims)
        out += struct.pack('<IQ', 0, offsets[i] if offsets else at[i])
    return out + b'\0' * ((32 - len(out) % 32) % 32) + data


def f32s(n, scale=0.01):
    return struct.pack(f'<{n}f', *[scale * ((i * 7) % 11 - 5) for i in range(n)])


def ones(n):
    return struct.pack(f'<{n}f', *[1.0] * n)


C, H, T = 4, 8, 8


def llama(vocab_kvs=(), V=4, skip=None, twice=None, shape=None, keys=None):
    kvs = [('general.architecture', STRING, 'llama'), ('llama.embedding_length', U32, C),
           ('llama.feed_forward_length', U32, H), ('llama.block_count', U32, 1),
           ('llama.attention.head_count', U32, 1), ('llama.attention.head_count_kv', U32, 1),
           ('llama.context_length', U32, T), ('llama.rope.dimension_count', U32, C),
           ('llama.attention.layer_norm_rms_epsilon', F32, 1e-5)]
    for k, t, v in keys or []:
        kvs = [(k2, t2, v2) for k2, t2, v2 in kvs if k2 != k] + [(k, t, v)]
    kvs += list(vocab_kvs)
    ts = [('token_embd.weight', [C, V], f32s(C * V)), ('blk.0.attn_norm.weight', [C], ones(C))]
    ts += [(f'blk.0.{p}.weight', [C, C], f32s(C * C)) for p in ('attn_q', 'attn_k', 'attn_v', 'attn_output')]
    ts += [('blk.0.ffn_norm.weight', [C], ones(C)), ('blk.0.ffn_gate.weight', [C, H], f32s(C * H)),
           ('blk.0.ffn_down.weight', [H, C], f32s(H * C)), ('blk.0.ffn_up.weight', [C, H], f32s(C * H)),
           ('output_norm.weight', [C], ones(C))]
    if shape:
        ts = [(n, shape[1], f32s(shape[1][0] * shape[1][1])) if n == shape[0] else (n, d, b) for n, d, b in ts]
    if skip:
        ts = [x for x in ts if x[0] != skip]
    if twice:
        ts += [x for x in ts if x[0] == twice]
    return kvs, ts


def gpt(vocab_kvs, V, eps=1e-5):
    kvs = [('general.architecture', STRING, 'gpt2'), ('gpt2.context_length', U32, T),
           ('gpt2.embedding_length', U32, C), ('gpt2.block_count', U32, 1),
           ('gpt2.feed_forward_length', U32, 4 * C), ('gpt2.attention.head_count', U32, 1),
           ('gpt2.attention.head_count_kv', U32, 1), ('gpt2.attention.layer_norm_epsilon', F32, eps)]
    kvs += list(vocab_kvs)
    ts = [('token_embd.weight', [C, V], f32s(C * V)), ('position_embd.weight', [C, T], f32s(C * T))]
    for part, rows in (('attn_norm', 0), ('attn_qkv', 3 * C), ('attn_output', C), ('ffn_norm', 0),
                       ('ffn_up', 4 * C), ('ffn_down', C)):
        cols = 4 * C if part == 'ffn_down' else C
        ts += [(f'blk.0.{part}.weight', [cols, rows] if rows else [C], f32s(cols * rows) if rows else ones(C)),
               (f'blk.0.{part}.bias', [rows if rows else C], f32s(rows if rows else C))]
    ts += [('output_norm.weight', [C], ones(C)), ('output_norm.bias', [C], f32s(C))]
    return kvs, ts


def rwkv(tokens, extra=()):
    return [('tokenizer.ggml.model', STRING, 'rwkv'), ('tokenizer.ggml.tokens', ARRAY, (STRING, tokens)),
            ('tokenizer.ggml.token_type', ARRAY, (I32, [1] * len(tokens))),
            ('tokenizer.ggml.add_bos_token', BOOL, False)] + list(extra)


def spm(types=None):
    """llama.cpp's 'llama' vocabulary as tapegrad exports a BPE: specials, the bytes <0xXX> (the
    space U+2581), then pieces of characters that are only byte tokens ("ab", "abc", "\u2581ab")."""
    toks = ['<unk>', '<s>', '</s>'] + ['\u2581' if b == 32 else f'<0x{b:02X}>' for b in range(256)]
    toks += ['ab', 'abc', '\u2581ab']
    ty = [2, 3, 3] + [1 if b == 32 else 6 for b in range(256)] + [1, 1, 1]
    for i, t in (types or {}).items():
        ty[i] = t
    scores = [0.0] * 259 + [-259.0, -260.0, -261.0]
    return [('tokenizer.ggml.model', STRING, 'llama'), ('tokenizer.ggml.tokens', ARRAY, (STRING, toks)),
            ('tokenizer.ggml.scores', ARRAY, (F32, scores)), ('tokenizer.ggml.token_type', ARRAY, (I32, ty)),
            ('tokenizer.ggml.bos_token_id', U32, 1), ('tokenizer.ggml.eos_token_id', U32, 2),
            ('tokenizer.ggml.add_space_prefix', BOOL, True)], len(toks)


def main(out):
    os.makedirs(out, exist_ok=True)
    files = {}
    files['llama_tiny.gguf'] = gguf(*llama())
    vocab, V = spm()
    files['llama_spm_byte_chars.gguf'] = gguf(*llama(vocab, V))
    files['edge_negative_i32.gguf'] = gguf(*llama(keys=[('llama.block_count', I32, -1)]))
    files['edge_negative_i8.gguf'] = gguf(*llama(keys=[('llama.attention.head_count', I8, -128)]))
    files['edge_negative_i16_alignment.gguf'] = gguf(*llama(keys=[('general.alignment', I16, -32)]))
    files['edge_tensor_twice.gguf'] = gguf(*llama(twice='blk.0.attn_q.weight'))
    kvs, ts = llama()
    files['edge_key_twice.gguf'] = gguf(kvs + [('llama.block_count', U32, 1)], ts)
    files['edge_shared_data.gguf'] = gguf(kvs, ts, offsets=[0] * len(ts))
    sizes = [len(d) + (32 - len(d) % 32) % 32 for _, _, d in ts]
    gap = [sum(sizes[:i]) + (32 if i == 3 else 0) for i in range(len(ts))]
    files['edge_data_gap.gguf'] = gguf(kvs, ts, offsets=gap)
    files['edge_missing_tensor.gguf'] = gguf(*llama(skip='blk.0.ffn_up.weight'))
    files['edge_wrong_shape.gguf'] = gguf(*llama(shape=('blk.0.attn_k.weight', [C, C + 1])))
    for name, t in (('edge_token_type_99.gguf', 99), ('edge_token_type_negative.gguf', -1)):
        vocab, V = spm({260: t})
        files[name] = gguf(*llama(vocab, V))
    files['gpt_rwkv_bytes.gguf'] = gguf(*gpt(rwkv([' ', 'a', 'b', 'c']), 4))
    files['gpt_rwkv_escapes.gguf'] = gguf(*gpt(rwkv(['\\x0a', ' ', '\\\\', '\\xff']), 4))
    legacy = [('tokenizer.ggml.model', STRING, 'llama'),
              ('tokenizer.ggml.tokens', ARRAY, (STRING, ['<0x0A>', '\u2581', '<0x61>', '<0x62>'])),
              ('tokenizer.ggml.scores', ARRAY, (F32, [0.0] * 4)), ('tokenizer.ggml.token_type', ARRAY, (I32, [6, 1, 6, 6])),
              ('tokenizer.ggml.add_bos_token', BOOL, False), ('tokenizer.ggml.add_space_prefix', BOOL, False)]
    files['gpt_llama_bytes_legacy.gguf'] = gguf(*gpt(legacy, 4))
    files['edge_rwkv_not_a_byte.gguf'] = gguf(*gpt(rwkv([' ', 'a', 'bc', 'd']), 4))
    files['edge_rwkv_out_of_order.gguf'] = gguf(*gpt(rwkv(['b', 'a', 'c', 'd']), 4))
    files['edge_rwkv_eos.gguf'] = gguf(*gpt(rwkv([' ', 'a', 'b', 'c'], [('tokenizer.ggml.eos_token_id', U32, 2)]), 4))
    files['edge_gpt_eps_near.gguf'] = gguf(*gpt(rwkv([' ', 'a', 'b', 'c']), 4, eps=1.0000001e-5))
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
        print(f'{name}: {len(data)} bytes')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: python3 tests/gguf_edge_files.py OUT_DIR')
    main(sys.argv[1])
