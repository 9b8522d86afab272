#!/usr/bin/python3
"""gguf_goldens.py: regenerate tests/data/gguf/ (run from anywhere).

Everything is computed by gguf_ref.py (NumPy, from the format definition)
and openelm_ref.py (the float64 OpenELM reference), never by the C code:

  blocks-TYPE.bin/.f32   random blocks of Q8_0 Q4_0 Q4_K Q5_K Q6_K and their
                         dequantized values (bit-exact float32)
  half.bin/.f32          f16 and bf16 bit patterns (specials included) and
  bhalf.bin/.f32         their float32 values
  round.f32 + round-f16.bin, round-bf16.bin
                         float32 values and their round-to-nearest-even
                         f16 / bf16 encodings
  quant.f32 + quant-q8_0.bin, quant-q4_0.bin
                         float32 blocks and ggml's reference quantization
  meta-v2.gguf           version 2, general.alignment 64, every metadata
                         value type, nested arrays, one tensor per type
  kquant.gguf            a one-layer OpenELM mixing types as a Q4_K_M file
                         does (Q6_K embedding, Q5_K qkv, Q4_0 output, Q4_K
                         gate, Q5_K up, Q6_K down; F32, F16, BF16 norms)
  kquant.logits.f32      its logits for KQUANT_TOKENS from openelm_ref.py
"""
import json
import os
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_ref as G  # noqa: E402
import openelm_ref  # noqa: E402

OUT = os.path.join(HERE, '..', 'data', 'gguf')
KQUANT_TOKENS = [1, 5, 77, 100, 3, 127, 64, 9, 42, 42]
rng = np.random.default_rng(20240611)


def f16_bytes(values):
    return np.asarray(values, np.float32).astype('<f2').view(np.uint8)


def random_blocks(typ, n, scale=1.0):
    """n random blocks of typ; the f16 fields are finite and of a sane size."""
    _, be, bb = G.GGML[G.BY_NAME[typ]]
    b = rng.integers(0, 256, size=(n, bb), dtype=np.uint8)
    def half(lo, count):
        return f16_bytes(rng.uniform(lo, 2 * lo, count) * scale).reshape(count, 2)
    if typ == 'Q8_0':
        b[:, 0:2] = half(1e-3, n)
    elif typ == 'Q4_0':
        b[:, 0:2] = half(1e-2, n)
    elif typ in ('Q4_K', 'Q5_K'):
        b[:, 0:2] = half(2e-4 if typ == 'Q4_K' else 1e-4, n)
        b[:, 2:4] = half(1e-4, n)
    elif typ == 'Q6_K':
        b[:, 208:210] = half(2e-5, n)
    return b


def write(name, data):
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(data if isinstance(data, (bytes, bytearray)) else data.tobytes())


def bf16_rne(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7fffffff) > 0x7f800000
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def blocks():
    for typ, n in (('Q8_0', 16), ('Q4_0', 16), ('Q4_K', 4), ('Q5_K', 4), ('Q6_K', 4)):
        b = random_blocks(typ, n)
        if typ == 'Q8_0':
            b[0, 2:] = np.array([-128, 127] * 16, np.int8).view(np.uint8)  # the extremes
        write('blocks-%s.bin' % typ.lower(), b)
        write('blocks-%s.f32' % typ.lower(), G.dequantize(b.tobytes(), typ).astype('<f4'))


def halves():
    special = [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
               0x7c00, 0xfc00, 0x3555, 0x0200]
    h = np.concatenate([np.array(special, np.uint16),
                        rng.integers(0, 0x7c00, 200).astype(np.uint16),
                        (rng.integers(0, 0x7c00, 100) | 0x8000).astype(np.uint16)])
    write('half.bin', h.astype('<u2'))
    write('half.f32', h.view('<f2').astype('<f4'))
    bspecial = [0x0000, 0x8000, 0x0001, 0x007f, 0x0080, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x7f80,
                0xff80]
    bh = np.concatenate([np.array(bspecial, np.uint16),
                         rng.integers(0, 0x7f80, 300).astype(np.uint16)])
    write('bhalf.bin', bh.astype('<u2'))
    write('bhalf.f32', (bh.astype(np.uint32) << 16).view('<f4'))

    # Rounding: halfway cases, subnormal halves, overflow, specials.
    f = [0.0, -0.0, 1.0, -2.5, 65504.0, 65519.99, 65520.0, 1e6, -1e6, np.inf, -np.inf,
         2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25,
         1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
         1e-30, 3.4e38]
    x = np.concatenate([np.array(f, np.float32), rng.normal(0, 1, 200).astype(np.float32),
                        (rng.normal(0, 1, 100) * 1e-5).astype(np.float32)])
    write('round.f32', x.astype('<f4'))
    with np.errstate(over='ignore'):
        write('round-f16.bin', x.astype('<f2').view('<u2'))
    write('round-bf16.bin', bf16_rne(x).astype('<u2'))


def quants():
    x = rng.normal(0, 1, (12, 32)).astype(np.float32)
    x[1] = 0.0                                   # all zero: d = 0
    x[2] = np.linspace(-1, 1, 32)                # a tie for the largest magnitude
    x[3] = -np.abs(x[3])                         # negative maximum
    x[4] = np.arange(32) - 16                    # exact integers
    x[5] = (np.arange(32) - 16) * 0.5 + 0.25     # halfway values after scaling
    x[6, 7] = 1e4                                # one outlier
    x[7] *= 1e-6
    write('quant.f32', x.astype('<f4'))
    write('quant-q8_0.bin', G.quantize_q8_0(x))
    write('quant-q4_0.bin', G.quantize_q4_0(x))


def meta():
    w = G.Writer(version=2, alignment=64)
    V = G.VT
    w.add('general.architecture', V['STRING'], 'test')
    w.add('general.alignment', V['U32'], 64)
    w.add('t.u8', V['U8'], 200)
    w.add('t.i8', V['I8'], -100)
    w.add('t.u16', V['U16'], 60000)
    w.add('t.i16', V['I16'], -30000)
    w.add('t.u32', V['U32'], 4000000000)
    w.add('t.i32', V['I32'], -2000000000)
    w.add('t.f32', V['F32'], 0.15625)
    w.add('t.bool', V['BOOL'], True)
    w.add('t.string', V['STRING'], 'héllo, wörld')
    w.add('t.empty', V['STRING'], '')
    w.add('t.u64', V['U64'], 2 ** 63 + 5)
    w.add('t.i64', V['I64'], -(2 ** 62))
    w.add('t.f64', V['F64'], -1.5e300)
    w.add('t.arr_i32', V['ARRAY'], (V['I32'], [3, -1, 4, 1, -5]))
    w.add('t.arr_u16', V['ARRAY'], (V['U16'], [1, 2, 65535]))
    w.add('t.arr_str', V['ARRAY'], (V['STRING'], ['a', '', 'ccc', '\u2581x']))
    w.add('t.arr_f64', V['ARRAY'], (V['F64'], [0.5, -0.25]))
    w.add('t.arr_bool', V['ARRAY'], (V['BOOL'], [True, False, True]))
    w.add('t.arr_empty', V['ARRAY'], (V['U8'], []))
    w.add('t.nested', V['ARRAY'], (V['ARRAY'], [(V['I8'], [1, 2]), (V['STRING'], ['x', 'yz']),
                                               (V['ARRAY'], [(V['U64'], [7])])]))
    for typ in ('Q8_0', 'Q4_0', 'Q4_K', 'Q5_K', 'Q6_K'):
        raw = open(os.path.join(OUT, 'blocks-%s.bin' % typ.lower()), 'rb').read()
        _, be, bb = G.GGML[G.BY_NAME[typ]]
        n = len(raw) // bb * be
        w.add_tensor('blocks.' + typ.lower(), [n // 2, 2] if typ in ('Q8_0', 'Q4_0') and
                     n // 2 % 32 == 0 else [n], G.BY_NAME[typ], raw)
    f = np.arange(-3, 4, dtype=np.float32) / 4
    w.add_tensor('dense.f32', [7], 0, f.astype('<f4').tobytes())
    w.add_tensor('dense.f16', [7, 1], 1, f.astype('<f2').tobytes())
    w.add_tensor('dense.bf16', [7], 30, bf16_rne(f).astype('<u2').tobytes())
    w.add_tensor('other.q5_0', [32], 6, bytes(22))  # a ggml type we do not run
    write('meta-v2.gguf', w.tobytes())


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, '<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(arr.shape),
                        'data_offsets': [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b' ' * ((-len(h)) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))


def kquant():
    d, hd, nq, nkv, ff, vocab = 256, 16, 4, 2, 256, 128
    V = G.VT
    w = G.Writer(version=3)
    w.add('general.architecture', V['STRING'], 'openelm')
    w.add('general.name', V['STRING'], 'kquant test')
    w.add('general.file_type', V['U32'], 15)  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    w.add('openelm.block_count', V['U32'], 1)
    w.add('openelm.context_length', V['U32'], 64)
    w.add('openelm.embedding_length', V['U32'], d)
    w.add('openelm.feed_forward_length', V['ARRAY'], (V['I32'], [ff]))
    w.add('openelm.attention.head_count', V['ARRAY'], (V['I32'], [nq]))
    w.add('openelm.attention.head_count_kv', V['U32'], nkv)  # a scalar is allowed too
    w.add('openelm.rope.freq_base', V['F32'], 10000.0)
    w.add('openelm.attention.layer_norm_rms_epsilon', V['F32'], 1e-6)
    w.add('openelm.rope.dimension_count', V['U32'], hd)
    w.add('openelm.attention.key_length', V['U32'], hd)
    w.add('openelm.attention.value_length', V['U32'], hd)
    w.add('tokenizer.ggml.model', V['STRING'], 'no_vocab')
    hf = {}

    def mat(name, hf_name, rows, cols, typ):
        _, be, bb = G.GGML[G.BY_NAME[typ]]
        raw = random_blocks(typ, rows * cols // be).tobytes()
        w.add_tensor(name, [cols, rows], G.BY_NAME[typ], raw)
        return G.dequantize(raw, typ).reshape(rows, cols)

    def vec(name, hf_name, n, typ):
        v = (1.0 + 0.2 * rng.normal(0, 1, n)).astype(np.float32)
        if typ == 'F16':
            raw, v = v.astype('<f2').tobytes(), v.astype(np.float16).astype(np.float32)
        elif typ == 'BF16':
            u = bf16_rne(v)
            raw, v = u.astype('<u2').tobytes(), (u.astype(np.uint32) << 16).view(np.float32)
        else:
            raw = v.astype('<f4').tobytes()
        w.add_tensor(name, [n], G.BY_NAME[typ], raw)
        hf[hf_name] = v

    p = 'transformer.layers.0.'
    hf['transformer.token_embeddings.weight'] = mat('token_embd.weight', None, vocab, d, 'Q6_K')
    vec('blk.0.attn_norm.weight', p + 'attn_norm.weight', d, 'F32')
    hf[p + 'attn.qkv_proj.weight'] = mat('blk.0.attn_qkv.weight', None, (nq + 2 * nkv) * hd, d,
                                         'Q5_K')
    vec('blk.0.attn_q_norm.weight', p + 'attn.q_norm.weight', hd, 'F16')
    vec('blk.0.attn_k_norm.weight', p + 'attn.k_norm.weight', hd, 'F32')
    # a row of 64 is no K-quant: llama.cpp falls back to a 32-block type
    hf[p + 'attn.out_proj.weight'] = mat('blk.0.attn_output.weight', None, d, nq * hd, 'Q4_0')
    vec('blk.0.ffn_norm.weight', p + 'ffn_norm.weight', d, 'BF16')
    gate = mat('blk.0.ffn_gate.weight', None, ff, d, 'Q4_K')
    # up in another type than gate: the loader must still pair them
    up = mat('blk.0.ffn_up.weight', None, ff, d, 'Q5_K')
    hf[p + 'ffn.proj_1.weight'] = np.concatenate([gate, up])
    hf[p + 'ffn.proj_2.weight'] = mat('blk.0.ffn_down.weight', None, d, ff, 'Q6_K')
    vec('output_norm.weight', 'transformer.norm.weight', d, 'F32')
    write('kquant.gguf', w.tobytes())

    cfg = {'model_type': 'openelm', 'num_transformer_layers': 1, 'model_dim': d,
           'head_dim': hd, 'vocab_size': vocab, 'max_context_length': 64,
           'num_query_heads': [nq], 'num_kv_heads': [nkv], 'ffn_multipliers': [ff / d],
           'ffn_dim_divisor': 256, 'ffn_with_glu': True, 'normalize_qk_projections': True,
           'share_input_output_layers': True, 'rope_freq_constant': 10000,
           'bos_token_id': 1, 'eos_token_id': 2}
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, 'config.json'), 'w') as f:
            json.dump(cfg, f)
        write_safetensors(os.path.join(tmp, 'model.safetensors'), hf)
        logits = openelm_ref.OpenELM(tmp).logits(KQUANT_TOKENS)
    write('kquant.logits.f32', np.asarray(logits, np.float64).astype('<f4'))


def main():
    os.makedirs(OUT, exist_ok=True)
    blocks()
    halves()
    quants()
    meta()
    kquant()
    for n in sorted(os.listdir(OUT)):
        print('%-22s %7d bytes' % (n, os.path.getsize(os.path.join(OUT, n))))


if __name__ == '__main__':
    main()
