#!/usr/bin/python3
"""Independent float64 NumPy reference of the OpenELM forward pass.

Written from docs/OPENELM.md (sections 1.1, 2 and 3), not from any C
code in this repository.  It reads a Hugging Face OpenELM folder
(config.json + model.safetensors, or model.safetensors.index.json + shards;
per-tensor dtypes F32 / BF16 / F16), parses safetensors itself (json + numpy
only) and computes logits for every position of a token list, plus greedy
decoding (ties -> lowest id).

All arithmetic is float64 on the stored weight values, except the RoPE
angles: inv_freq, the angle p*inv_freq are computed in float32 like HF /
corenet (docs/OPENELM.md 2.2.4); cos/sin are then taken in float64 of that f32
angle.

Usage as a program:
    openelm_ref.py MODEL_DIR TOKEN [TOKEN...]        print argmax per position
    openelm_ref.py MODEL_DIR --greedy N TOKEN...     also greedy-decode N tokens
"""

import json
import os
import struct
import sys

import numpy as np

RMS_EPS = 1e-6

_ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


# --------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------
def read_safetensors(path):
    """Return {name: float64 ndarray} for one .safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: too short" % path)
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info["dtype"]
        if dt not in _ST_DTYPES:
            raise ValueError("%s: unsupported dtype %s for %s" % (path, dt, name))
        npdt, size = _ST_DTYPES[dt]
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if end - begin != count * size:
            raise ValueError("%s: %s: size mismatch" % (path, name))
        buf = np.frombuffer(raw, dtype=npdt, count=count, offset=base + begin)
        if dt == "BF16":
            arr = (buf.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = buf
        out[name] = arr.astype(np.float64).reshape(shape)
    return out


def read_weights(model_dir):
    single = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(single):
        return read_safetensors(single)
    if not os.path.exists(index):
        raise FileNotFoundError("no model.safetensors or index in %s" % model_dir)
    with open(index) as f:
        idx = json.load(f)
    weights = {}
    for shard in sorted(set(idx["weight_map"].values())):
        part = read_safetensors(os.path.join(model_dir, shard))
        for k, v in part.items():
            if idx["weight_map"].get(k) != shard:
                raise ValueError("%s found in %s but index says %s"
                                 % (k, shard, idx["weight_map"].get(k)))
            weights[k] = v
    missing = set(idx["weight_map"]) - set(weights)
    if missing:
        raise ValueError("tensors missing from shards: %s" % sorted(missing))
    return weights


# --------------------------------------------------------------------------
# config
# --------------------------------------------------------------------------
def make_divisible(v, divisor):
    """corenet math_utils.make_divisible (docs/OPENELM.md 1.1), min_value=divisor."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Config:
    def __init__(self, cfg):
        self.raw = cfg
        self.n_layers = int(cfg["num_transformer_layers"])
        self.d = int(cfg["model_dim"])
        self.hd = int(cfg["head_dim"])
        self.vocab = int(cfg["vocab_size"])
        self.nq = [int(x) for x in cfg["num_query_heads"]]
        self.nkv = [int(x) for x in cfg["num_kv_heads"]]
        mult = cfg["ffn_multipliers"]
        if not isinstance(mult, list):
            mult = [mult] * self.n_layers
        self.ffn_mult = [float(m) for m in mult]
        self.ffn_div = int(cfg["ffn_dim_divisor"])
        self.ffn = [make_divisible(m * self.d, self.ffn_div) for m in self.ffn_mult]
        self.theta = float(cfg.get("rope_freq_constant", 10000))
        self.bos = int(cfg.get("bos_token_id", 1))
        self.eos = int(cfg.get("eos_token_id", 2))
        assert len(self.nq) == len(self.nkv) == len(self.ffn) == self.n_layers
        assert cfg.get("ffn_with_glu", True) is True
        assert cfg.get("normalize_qk_projections", True) is True
        assert cfg.get("share_input_output_layers", True) is True
        for q, kv in zip(self.nq, self.nkv):
            assert q % kv == 0, "num_query_heads must be a multiple of num_kv_heads"


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------
def rmsnorm(x, w):
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + RMS_EPS) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope_cos_sin(positions, hd, theta):
    """float32 angles like HF/corenet, cos/sin in float64 of those angles."""
    e = np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd)           # f32
    pw = np.power(np.float64(theta), e.astype(np.float64)).astype(np.float32)
    inv_freq = (np.float32(1.0) / pw).astype(np.float32)                  # f32
    pos = np.asarray(positions, dtype=np.float32)
    ang = (pos[:, None] * inv_freq[None, :]).astype(np.float32)          # f32
    ang = np.concatenate([ang, ang], axis=1).astype(np.float64)          # [T, hd]
    return np.cos(ang), np.sin(ang)


def apply_rope(x, cos, sin):
    """x: [heads, T, hd]; rotate-half (NeoX) pairs (j, j+hd/2)."""
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos[None] + rot * sin[None]


class OpenELM:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = Config(json.load(f))
        self.w = read_weights(model_dir)
        self._check_shapes()

    def _check_shapes(self):
        c, w = self.cfg, self.w
        exp = {"transformer.token_embeddings.weight": (c.vocab, c.d),
               "transformer.norm.weight": (c.d,)}
        for i in range(c.n_layers):
            p = "transformer.layers.%d." % i
            exp[p + "attn_norm.weight"] = (c.d,)
            exp[p + "attn.qkv_proj.weight"] = ((c.nq[i] + 2 * c.nkv[i]) * c.hd, c.d)
            exp[p + "attn.q_norm.weight"] = (c.hd,)
            exp[p + "attn.k_norm.weight"] = (c.hd,)
            exp[p + "attn.out_proj.weight"] = (c.d, c.nq[i] * c.hd)
            exp[p + "ffn_norm.weight"] = (c.d,)
            exp[p + "ffn.proj_1.weight"] = (2 * c.ffn[i], c.d)
            exp[p + "ffn.proj_2.weight"] = (c.d, c.ffn[i])
        if set(exp) != set(w):
            raise ValueError("tensor set mismatch: missing %s extra %s"
                             % (sorted(set(exp) - set(w)), sorted(set(w) - set(exp))))
        for k, s in exp.items():
            if tuple(w[k].shape) != s:
                raise ValueError("%s: shape %s, expected %s" % (k, w[k].shape, s))

    def logits(self, tokens):
        """float64 logits [T, vocab] for every position (causal, positions 0..T-1)."""
        c, w = self.cfg, self.w
        tokens = list(tokens)
        T = len(tokens)
        E = w["transformer.token_embeddings.weight"]
        x = E[np.asarray(tokens)]                                          # [T, d]
        cos, sin = rope_cos_sin(range(T), c.hd, c.theta)
        mask = np.triu(np.full((T, T), -np.inf), k=1)
        for i in range(c.n_layers):
            p = "transformer.layers.%d." % i
            nq, nkv, hd, ff = c.nq[i], c.nkv[i], c.hd, c.ffn[i]
            h = rmsnorm(x, w[p + "attn_norm.weight"])
            qkv = h @ w[p + "attn.qkv_proj.weight"].T                      # [T, (nq+2nkv)*hd]
            qkv = qkv.reshape(T, nq + 2 * nkv, hd).transpose(1, 0, 2)      # [heads, T, hd]
            q, k, v = qkv[:nq], qkv[nq:nq + nkv], qkv[nq + nkv:]
            q = rmsnorm(q, w[p + "attn.q_norm.weight"])
            k = rmsnorm(k, w[p + "attn.k_norm.weight"])
            q = apply_rope(q, cos, sin)
            k = apply_rope(k, cos, sin)
            grp = nq // nkv
            k = np.repeat(k, grp, axis=0)                                  # repeat_interleave
            v = np.repeat(v, grp, axis=0)
            s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask[None]
            s = s - s.max(axis=-1, keepdims=True)
            pr = np.exp(s)
            pr /= pr.sum(axis=-1, keepdims=True)
            o = (pr @ v).transpose(1, 0, 2).reshape(T, nq * hd)
            x = x + o @ w[p + "attn.out_proj.weight"].T
            h = rmsnorm(x, w[p + "ffn_norm.weight"])
            y = h @ w[p + "ffn.proj_1.weight"].T
            z = silu(y[:, :ff]) * y[:, ff:]
            x = x + z @ w[p + "ffn.proj_2.weight"].T
        x = rmsnorm(x, w["transformer.norm.weight"])
        return x @ E.T

    def greedy(self, tokens, n):
        """Greedy decoding of n tokens; returns (new_tokens, top2_gaps, top_logits).

        Recomputes the full sequence each step (mathematically identical to a
        KV-cached decode).  Ties go to the lowest id (np.argmax)."""
        seq = list(tokens)
        new, gaps, tops = [], [], []
        for _ in range(n):
            row = self.logits(seq)[-1]
            t = int(np.argmax(row))
            srt = np.sort(row)
            new.append(t)
            gaps.append(float(srt[-1] - srt[-2]))
            tops.append(float(srt[-1]))
            seq.append(t)
        return new, gaps, tops


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    model = OpenELM(argv[1])
    args = argv[2:]
    n = 0
    if args[0] == "--greedy":
        n = int(args[1])
        args = args[2:]
    toks = [int(t) for t in args]
    lg = model.logits(toks)
    print("argmax:", [int(i) for i in lg.argmax(axis=1)])
    print("last logits std %.4f" % lg[-1].std())
    if n:
        new, gaps, _ = model.greedy(toks, n)
        print("greedy:", new)
        print("min top2 gap: %.4g" % min(gaps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
