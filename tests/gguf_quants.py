#!/usr/bin/env python3
"""The weights of tiny_gpt's GGUF exports against gguf-py's (llama.cpp's
Python package, whose quantizers are numpy ports of ggml's reference
ones): each tensor of a --type f16 or q8_0 export must be, byte for byte,
what gguf-py makes of the f32 export's same tensor in the type the file
gives it; and the types must be the documented ones (vectors F32, a
matrix the file's type, or F16 in a q8_0 file when its rows are not a
multiple of 32 long). Called by tests/gguf_llama.js:
    python3 tests/gguf_quants.py GGUF_PY_DIR F32.gguf OTHER.gguf...
Prints one line per file, exits 1 on any difference."""
import sys

sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
from gguf import GGUFReader, GGMLQuantizationType as Q, quants  # noqa: E402

WANT = {'f16': Q.F16, 'q8_0': Q.Q8_0}
ref = {t.name: t for t in GGUFReader(sys.argv[2]).tensors}
status = 0
for path in sys.argv[3:]:
    kind = path.rsplit('.', 2)[-2]
    equal, bad = 0, []
    for t in GGUFReader(path).tensors:
        r = ref[t.name]
        x = np.array(r.data, dtype=np.float32).reshape([int(d) for d in reversed(r.shape)])
        want = Q.F32 if x.ndim == 1 else WANT[kind] if WANT[kind] != Q.Q8_0 or x.shape[-1] % 32 == 0 else Q.F16
        got = np.array(t.data).view(np.uint8).ravel()
        made = (x if want == Q.F32 else np.asarray(quants.quantize(x, want))).view(np.uint8).ravel()
        if t.tensor_type != want:
            bad.append(f'{t.name} is {t.tensor_type.name}, not {want.name}')
        elif not np.array_equal(got, made):
            bad.append(f'{t.name} ({want.name}) differs at byte {int(np.argmax(got != made))}')
        else:
            equal += 1
    if bad:
        status = 1
        print(f'FAIL {path}: ' + '; '.join(bad[:5]))
    else:
        print(f'ok {path}: its {equal} tensors are gguf-py\'s of the f32 export, byte for byte')
sys.exit(status)
