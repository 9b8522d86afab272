#!/usr/bin/python3
"""gguf_ref.py: an independent GGUF reader, writer and dequantizer in NumPy.

Written from the GGUF format definition (ggml docs/gguf.md: header, typed
metadata, tensor infos, alignment) and ggml's block layouts, not from the C
code it checks.  Dequantization keeps ggml's float32 order of operations so
that the values are bit-exact, not merely close.

CLI:
  gguf_ref.py FILE                 list metadata and tensors
  gguf_ref.py FILE TENSOR OUT.f32  dequantize one tensor to raw float32
"""
import struct
import sys

import numpy as np

VT = dict(U8=0, I8=1, U16=2, I16=3, U32=4, I32=5, F32=6, BOOL=7, STRING=8, ARRAY=9,
          U64=10, I64=11, F64=12)
SCALAR = {0: '<u1', 1: '<i1', 2: '<u2', 3: '<i2', 4: '<u4', 5: '<i4', 6: '<f4', 7: '<u1',
          10: '<u8', 11: '<i8', 12: '<f8'}

# ggml type number: (name, weights per block, bytes per block)
GGML = {0: ('F32', 1, 4), 1: ('F16', 1, 2), 2: ('Q4_0', 32, 18), 8: ('Q8_0', 32, 34),
        12: ('Q4_K', 256, 144), 13: ('Q5_K', 256, 176), 14: ('Q6_K', 256, 210),
        30: ('BF16', 1, 2)}
BY_NAME = {v[0]: k for k, v in GGML.items()}


# ---------------------------------------------------------------- reading

class Reader:
    def __init__(self, path):
        self.b = open(path, 'rb').read()
        self.pos = 0
        b = self.b
        assert b[:4] == b'GGUF', 'no magic'
        self.pos = 4
        self.version = self.u(4)
        assert self.version in (2, 3), self.version
        n_t, n_kv = self.u(8), self.u(8)
        self.kv = {}
        for _ in range(n_kv):
            k = self.s().decode()
            t = self.u(4)
            assert k not in self.kv
            self.kv[k] = (t, self.value(t))
        self.align = self.kv.get('general.alignment', (4, 32))[1]
        self.tensors = {}
        for _ in range(n_t):
            name = self.s().decode()
            nd = self.u(4)
            ne = [self.u(8) for _ in range(nd)]
            typ = self.u(4)
            off = self.u(8)
            self.tensors[name] = (ne, typ, off)
        self.data = (self.pos + self.align - 1) // self.align * self.align

    def u(self, n):
        v = int.from_bytes(self.b[self.pos:self.pos + n], 'little')
        self.pos += n
        return v

    def s(self):
        n = self.u(8)
        v = self.b[self.pos:self.pos + n]
        assert len(v) == n
        self.pos += n
        return v

    def value(self, t):
        if t in SCALAR:
            dt = np.dtype(SCALAR[t])
            v = np.frombuffer(self.b, dt, 1, self.pos)[0]
            self.pos += dt.itemsize
            return bool(v) if t == VT['BOOL'] else v.item()
        if t == VT['STRING']:
            return self.s().decode('utf-8', 'surrogateescape')
        if t == VT['ARRAY']:
            et, n = self.u(4), self.u(8)
            return [self.value(et) for _ in range(n)]
        raise ValueError('value type %d' % t)

    def raw(self, name):
        ne, typ, off = self.tensors[name]
        _, be, bb = GGML[typ]
        count = int(np.prod(ne))
        start = self.data + off
        return self.b[start:start + count // be * bb], typ, ne

    def tensor(self, name):
        raw, typ, ne = self.raw(name)
        return dequantize(raw, GGML[typ][0]).reshape(list(reversed(ne)))


# ---------------------------------------------------------- dequantizing

def f16(raw_u16):
    return raw_u16.view('<f2').astype(np.float32)



def _q8(b):
    b = b.reshape(-1, 34)
    d = f16(b[:, 0:2].copy().view('<u2'))[:, 0]
    q = b[:, 2:].view(np.int8).astype(np.float32)
    return (d[:, None] * q).reshape(-1)


def _q4_0(b):
    b = b.reshape(-1, 18)
    d = f16(b[:, 0:2].copy().view('<u2'))[:, 0]
    qs = b[:, 2:]
    lo = (qs & 15).astype(np.int32) - 8
    hi = (qs >> 4).astype(np.int32) - 8
    q = np.concatenate([lo, hi], axis=1).astype(np.float32)
    return (d[:, None] * q).reshape(-1)


def _k_scales(s):
    """12 bytes -> 8 six-bit scales and 8 six-bit mins (per block row)."""
    s = s.astype(np.int32)
    sc = np.empty((s.shape[0], 8), np.int32)
    mn = np.empty((s.shape[0], 8), np.int32)
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            mn[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 15) | ((s[:, j - 4] >> 6) << 4)
            mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, mn


def _q4_k(b):
    b = b.reshape(-1, 144)
    d = f16(b[:, 0:2].copy().view('<u2'))[:, 0]
    dmin = f16(b[:, 2:4].copy().view('<u2'))[:, 0]
    sc, mn = _k_scales(b[:, 4:16])
    qs = b[:, 16:].astype(np.int32)
    out = np.empty((b.shape[0], 256), np.float32)
    for j in range(4):  # 64 weights per 32 bytes: low nibbles, then high
        q = qs[:, 32 * j:32 * j + 32]
        for half, nib in ((0, q & 15), (1, q >> 4)):
            k = 2 * j + half
            dl = d * sc[:, k].astype(np.float32)
            ml = dmin * mn[:, k].astype(np.float32)
            out[:, 64 * j + 32 * half:64 * j + 32 * half + 32] = \
                dl[:, None] * nib.astype(np.float32) - ml[:, None]
    return out.reshape(-1)


def _q5_k(b):
    b = b.reshape(-1, 176)
    d = f16(b[:, 0:2].copy().view('<u2'))[:, 0]
    dmin = f16(b[:, 2:4].copy().view('<u2'))[:, 0]
    sc, mn = _k_scales(b[:, 4:16])
    qh = b[:, 16:48].astype(np.int32)
    qs = b[:, 48:].astype(np.int32)
    out = np.empty((b.shape[0], 256), np.float32)
    for j in range(4):
        q = qs[:, 32 * j:32 * j + 32]
        for half, nib in ((0, q & 15), (1, q >> 4)):
            k = 2 * j + half  # the fifth bit of sub-block k is bit k of qh[l]
            v = nib + 16 * ((qh >> k) & 1)
            dl = d * sc[:, k].astype(np.float32)
            ml = dmin * mn[:, k].astype(np.float32)
            out[:, 32 * k:32 * k + 32] = dl[:, None] * v.astype(np.float32) - ml[:, None]
    return out.reshape(-1)


def _q6_k(b):
    b = b.reshape(-1, 210)
    ql = b[:, 0:128].astype(np.int32)
    qh = b[:, 128:192].astype(np.int32)
    sc = b[:, 192:208].view(np.int8).astype(np.float32)
    d = f16(b[:, 208:210].copy().view('<u2'))[:, 0]
    out = np.empty((b.shape[0], 256), np.float32)
    for n in range(2):  # two halves of 128 weights
        L = ql[:, 64 * n:64 * n + 64]
        H = qh[:, 32 * n:32 * n + 32]
        parts = [(L[:, 0:32] & 15) | ((H & 3) << 4),
                 (L[:, 32:64] & 15) | (((H >> 2) & 3) << 4),
                 (L[:, 0:32] >> 4) | (((H >> 4) & 3) << 4),
                 (L[:, 32:64] >> 4) | (((H >> 6) & 3) << 4)]
        for p, q in enumerate(parts):  # weights 128n + 32p + l, l < 32
            for h in range(2):  # 16 weights per scale
                s = sc[:, 8 * n + 2 * p + h]
                base = 128 * n + 32 * p + 16 * h
                qq = (q[:, 16 * h:16 * h + 16] - 32).astype(np.float32)
                out[:, base:base + 16] = (d * s)[:, None] * qq
    return out.reshape(-1)


def dequantize(raw, typ):
    a = np.frombuffer(raw, np.uint8)
    if typ == 'F32':
        return a.view('<f4').astype(np.float32)
    if typ == 'F16':
        return a.view('<f2').astype(np.float32)
    if typ == 'BF16':
        return (a.view('<u2').astype(np.uint32) << 16).view(np.float32)
    return {'Q8_0': _q8, 'Q4_0': _q4_0, 'Q4_K': _q4_k, 'Q5_K': _q5_k, 'Q6_K': _q6_k}[typ](a)


# ---------------------------------------------------------- quantizing

def round_away(x):
    """C roundf: halves away from zero."""
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def quantize_q8_0(x):
    """ggml's reference: d = max|x|/127, q = round(x/d)."""
    x = x.astype(np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide='ignore'):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = round_away(x * inv[:, None]).astype(np.int8)
    out = np.empty((x.shape[0], 34), np.uint8)
    out[:, 0:2] = d.astype('<f2').view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def quantize_q4_0(x):
    """ggml's reference: the value of largest magnitude maps to -8."""
    x = x.astype(np.float32).reshape(-1, 32)
    idx = np.abs(x).argmax(axis=1)  # first of equal magnitudes, as the C loop
    mx = x[np.arange(x.shape[0]), idx]
    d = (mx / np.float32(-8)).astype(np.float32)
    with np.errstate(divide='ignore'):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = x * inv[:, None] + np.float32(8.5)
    q = np.minimum(np.trunc(v).astype(np.int32), 15)  # (int8_t) truncates
    out = np.empty((x.shape[0], 18), np.uint8)
    out[:, 0:2] = d.astype('<f2').view(np.uint8).reshape(-1, 2)
    out[:, 2:] = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
    return out.tobytes()


# ---------------------------------------------------------------- writing

class Writer:
    """Enough of a GGUF writer to make test files (any version, alignment,
    value type), independent of engine/formats/gguf_write.c."""

    def __init__(self, version=3, alignment=32):
        self.version, self.alignment = version, alignment
        self.kv = []
        self.tensors = []

    @staticmethod
    def enc_str(s):
        b = s if isinstance(s, bytes) else s.encode()
        return struct.pack('<Q', len(b)) + b

    def enc_value(self, t, v):
        if t in SCALAR:
            return np.array([v], dtype=SCALAR[t]).tobytes()
        if t == VT['STRING']:
            return self.enc_str(v)
        et, items = v
        out = struct.pack('<IQ', et, len(items))
        return out + b''.join(self.enc_value(et, i) for i in items)

    def add(self, key, t, v):
        self.kv.append((key, t, v))

    def add_tensor(self, name, ne, typ, raw):
        self.tensors.append((name, ne, typ, raw))

    def tobytes(self):
        out = b'GGUF' + struct.pack('<IQQ', self.version, len(self.tensors), len(self.kv))
        for k, t, v in self.kv:
            out += self.enc_str(k) + struct.pack('<I', t) + self.enc_value(t, v)
        off, a = 0, self.alignment
        for name, ne, typ, raw in self.tensors:
            out += self.enc_str(name) + struct.pack('<I', len(ne))
            out += b''.join(struct.pack('<Q', n) for n in ne)
            out += struct.pack('<IQ', typ, off)
            off = (off + len(raw) + a - 1) // a * a
        out += b'\0' * ((-len(out)) % a)
        for _, _, _, raw in self.tensors:
            out += raw + b'\0' * ((-len(raw)) % a)
        return out


def main(argv):
    r = Reader(argv[1])
    if len(argv) == 2:
        print('version', r.version, 'alignment', r.align)
        for k, (t, v) in r.kv.items():
            s = repr(v)
            print('%-45s %-6s %s' % (k, t, s if len(s) < 80 else s[:77] + '...'))
        for n, (ne, typ, off) in r.tensors.items():
            print('%-32s %-5s %-20s @%d' % (n, GGML.get(typ, (typ,))[0], ne, off))
        return 0
    r.tensor(argv[2]).astype('<f4').tofile(argv[3])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
