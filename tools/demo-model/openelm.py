"""OpenELM in PyTorch, exactly as docs/OPENELM.md (sections 1-3)
describes it: per-layer query/kv heads and FFN widths from the multipliers
(make_divisible), QK RMSNorm before RoPE (rotate-half), GQA by
repeat_interleave, SwiGLU (first half of proj_1 is the gate), RMSNorm eps
1e-6, tied embeddings; the Hub's config.json keys and tensor names.
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

RMS_EPS = 1e-6

SIZES = {
    # about 5M parameters (q8_0 GGUF: 5.5 MB)
    "small": dict(num_transformer_layers=8, model_dim=256, head_dim=32, num_gqa_groups=4,
                  qkv_multipliers=[0.5, 1.0], ffn_multipliers=[0.5, 3.0], ffn_dim_divisor=64,
                  max_context_length=1024),
    # about 17M parameters (bf16: 34 MB)
    "large": dict(num_transformer_layers=12, model_dim=384, head_dim=32, num_gqa_groups=4,
                  qkv_multipliers=[0.5, 1.0], ffn_multipliers=[0.5, 4.0], ffn_dim_divisor=64,
                  max_context_length=1024),
}


def make_divisible(v, divisor):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def hf_config(size, vocab_size, dtype="float32"):
    """config.json exactly as the Hub's OpenELM checkpoints spell it."""
    s = SIZES[size]
    L, d, hd, g = s["num_transformer_layers"], s["model_dim"], s["head_dim"], s["num_gqa_groups"]
    qkv_m = [round(float(x), 2) for x in np.linspace(s["qkv_multipliers"][0], s["qkv_multipliers"][1], L)]
    ffn_m = [round(float(x), 2) for x in np.linspace(s["ffn_multipliers"][0], s["ffn_multipliers"][1], L)]
    nq = [make_divisible(d * m, hd * g) // hd for m in qkv_m]
    nkv = [q // g for q in nq]
    return {
        "activation_fn_name": "swish",
        "architectures": ["OpenELMForCausalLM"],
        "auto_map": {"AutoConfig": "configuration_openelm.OpenELMConfig",
                     "AutoModelForCausalLM": "modeling_openelm.OpenELMForCausalLM"},
        "bos_token_id": 1,
        "eos_token_id": 2,
        "ffn_dim_divisor": s["ffn_dim_divisor"],
        "ffn_multipliers": ffn_m,
        "ffn_with_glu": True,
        "head_dim": hd,
        "initializer_range": 0.02,
        "max_context_length": s["max_context_length"],
        "model_dim": d,
        "model_type": "openelm",
        "normalization_layer_name": "rms_norm",
        "normalize_qk_projections": True,
        "num_gqa_groups": g,
        "num_kv_heads": nkv,
        "num_query_heads": nq,
        "num_transformer_layers": L,
        "qkv_multipliers": list(s["qkv_multipliers"]),
        "rope_freq_constant": 10000,
        "rope_max_length": 4096,
        "share_input_output_layers": True,
        "torch_dtype": dtype,
        "transformers_version": "4.39.3",
        "use_cache": True,
        "vocab_size": vocab_size,
    }


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    @staticmethod
    def _unit(x):
        xf = x.float()
        return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_EPS)

    def f32(self, x):
        """The normalized x in f32, whatever x's dtype (no cast back)."""
        return self._unit(x) * self.weight

    def forward(self, x):
        y = self._unit(x)
        return y.type_as(x) * self.weight.type_as(x) if x.dtype != torch.float32 else y * self.weight


class Attn(nn.Module):
    def __init__(self, d, hd, nq, nkv):
        super().__init__()
        self.hd, self.nq, self.nkv = hd, nq, nkv
        self.qkv_proj = nn.Linear(d, (nq + 2 * nkv) * hd, bias=False)
        self.q_norm = RMSNorm(hd)
        self.k_norm = RMSNorm(hd)
        self.out_proj = nn.Linear(nq * hd, d, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        qkv = self.qkv_proj(x).view(B, T, self.nq + 2 * self.nkv, self.hd).transpose(1, 2)
        q, k, v = qkv.split([self.nq, self.nkv, self.nkv], dim=1)
        grp = self.nq // self.nkv
        # Elementwise passes over the scores cost more than the matmuls here
        # (CPU, no fused attention in torch 1.13): norm, rope and the score
        # scale in one f32 pass over q and k; GQA by stacking a kv head's
        # query heads along time (no copies of k and v); the causal mask added
        # by the matmul itself; the softmax in the matmuls' dtype.
        q = (apply_rope(self.q_norm.f32(q), cos, sin) * (1.0 / math.sqrt(self.hd))).type_as(v)
        k = apply_rope(self.k_norm.f32(k), cos, sin).type_as(v)
        qg = q.reshape(B * self.nkv, grp * T, self.hd)
        kt = k.reshape(B * self.nkv, T, self.hd).transpose(1, 2)
        att = torch.baddbmm(mask.repeat(grp, 1).type_as(v), qg, kt)
        att = torch.softmax(att, dim=-1)
        o = (att.type_as(v) @ v.reshape(B * self.nkv, T, self.hd))
        o = o.view(B, self.nq, T, self.hd).transpose(1, 2).reshape(B, T, self.nq * self.hd)
        return self.out_proj(o)


class FFN(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.ff = ff
        self.proj_1 = nn.Linear(d, 2 * ff, bias=False)
        self.proj_2 = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        y = self.proj_1(x)
        gate, up = y.chunk(2, dim=-1)
        return self.proj_2(F.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, d, hd, nq, nkv, ff):
        super().__init__()
        self.attn_norm = RMSNorm(d)
        self.attn = Attn(d, hd, nq, nkv)
        self.ffn_norm = RMSNorm(d)
        self.ffn = FFN(d, ff)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


def rope_cos_sin(T, hd, theta, device=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    pos = torch.arange(T, dtype=torch.float32)
    ang = pos[:, None] * inv_freq[None, :]
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin):
    """Rotate-half RoPE; returns f32."""
    T = x.shape[-2]
    xf = x.float()
    a, b = xf.chunk(2, dim=-1)
    rot = torch.cat([-b, a], dim=-1)
    return xf * cos[:T] + rot * sin[:T]


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, hd = cfg["model_dim"], cfg["head_dim"]
        self.token_embeddings = nn.Embedding(cfg["vocab_size"], d)
        self.layers = nn.ModuleList()
        for i in range(cfg["num_transformer_layers"]):
            ff = make_divisible(cfg["ffn_multipliers"][i] * d, cfg["ffn_dim_divisor"])
            self.layers.append(Layer(d, hd, cfg["num_query_heads"][i], cfg["num_kv_heads"][i], ff))
        self.norm = RMSNorm(d)


class OpenELM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg)
        cos, sin = rope_cos_sin(cfg["max_context_length"], cfg["head_dim"], cfg["rope_freq_constant"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        std = cfg["initializer_range"]
        for n, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, std)
        # scale residual-branch outputs down with depth (GPT-2 style)
        for layer in self.transformer.layers:
            for p in (layer.attn.out_proj.weight, layer.ffn.proj_2.weight):
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * cfg["num_transformer_layers"]))

    def forward(self, ids, select=None):
        """logits [B, T, V]; with a bool mask `select` [B, T] only those rows [N, V]."""
        T = ids.shape[1]
        x = self.transformer.token_embeddings(ids)
        mask = torch.full((T, T), float("-inf"), device=ids.device).triu(1)
        for layer in self.transformer.layers:
            x = layer(x, self.cos, self.sin, mask)
        x = self.transformer.norm(x)
        if select is not None:
            x = x[select]
        return x @ self.transformer.token_embeddings.weight.type_as(x).t()


def n_params(model):
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------ safetensors

_DT = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def save_safetensors(path, tensors, metadata=None):
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if t.dtype == torch.bfloat16:
            b = t.view(torch.int16).numpy().tobytes()
        else:
            b = t.numpy().tobytes()
        header[name] = {"dtype": _DT[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = raw[8 + n + a: 8 + n + b]
        if info["dtype"] == "BF16":
            t = torch.frombuffer(bytearray(buf), dtype=torch.int16).view(torch.bfloat16)
        elif info["dtype"] == "F16":
            t = torch.frombuffer(bytearray(buf), dtype=torch.float16)
        else:
            t = torch.frombuffer(bytearray(buf), dtype=torch.float32)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def save_hf(model, folder, dtype=torch.float32, tokenizer=None):
    """A Hugging Face OpenELM folder: config.json, model.safetensors,
    generation_config.json (and tokenizer.model when given)."""
    os.makedirs(folder, exist_ok=True)
    cfg = dict(model.cfg)
    cfg["torch_dtype"] = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
    sd = {k: v.detach().to(dtype) for k, v in model.state_dict().items()}
    save_safetensors(os.path.join(folder, "model.safetensors"), sd, {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2,
                   "transformers_version": "4.39.3"}, f, indent=2)
        f.write("\n")
    if tokenizer:
        import shutil
        shutil.copyfile(tokenizer, os.path.join(folder, "tokenizer.model"))


def load_hf(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    m = OpenELM(cfg)
    sd = load_safetensors(os.path.join(folder, "model.safetensors"))
    m.load_state_dict({k: v.float() for k, v in sd.items()})
    return m
