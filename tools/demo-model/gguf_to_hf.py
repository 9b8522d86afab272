#!/usr/bin/python3
"""A shipped demo GGUF back to an f32 Hugging Face folder, to train on from it.

    /usr/bin/python3 tools/demo-model/gguf_to_hf.py models/guide-small-instruct.gguf \
        --size small --out tools/demo-model/out/models/guide-small-from-gguf

The weights are the GGUF's dequantized ones (elmchat quantize --type f32 does
the dequantizing, so only f32 tensors are read here): what `--init` needs when
a machine has lost runs/ and only the shipped file is left.  The config comes
from openelm.hf_config(SIZE); the GGUF's tensor shapes must match it.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openelm  # noqa: E402

GGUF_F32 = 0
# GGUF metadata value types -> struct format (8: string, 9: array)
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("Q")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("I"), self.take("Q")
            return [self.value(et) for _ in range(n)]
        return self.take(SCALAR[t])


def read_gguf_f32(path):
    """{name: float32 array in GGUF's dims order reversed (rows, cols)}."""
    with open(path, "rb") as f:
        buf = f.read()
    r = Reader(buf)
    if r.take("4s") != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    if version < 2:
        raise SystemExit(f"{path}: GGUF version {version} is too old")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        infos.append((name, dims, r.take("I"), r.take("Q")))
    align = int(meta.get("general.alignment", 32))
    base = (r.pos + align - 1) // align * align
    out = {}
    for name, dims, typ, off in infos:
        if typ != GGUF_F32:
            raise SystemExit(f"{path}: tensor {name} is not f32 (type {typ})")
        n = int(np.prod(dims))
        a = np.frombuffer(buf, dtype="<f4", count=n, offset=base + off)
        out[name] = a.reshape(list(reversed(dims))).copy()
    return out


def hf_state(t, cfg):
    """GGUF tensor names (llama.cpp's OpenELM layout) -> the Hub's."""
    sd = {"transformer.token_embeddings.weight": t["token_embd.weight"],
          "transformer.norm.weight": t["output_norm.weight"]}
    for i in range(cfg["num_transformer_layers"]):
        b, h = f"blk.{i}.", f"transformer.layers.{i}."
        sd[h + "attn_norm.weight"] = t[b + "attn_norm.weight"]
        sd[h + "attn.qkv_proj.weight"] = t[b + "attn_qkv.weight"]
        sd[h + "attn.q_norm.weight"] = t[b + "attn_q_norm.weight"]
        sd[h + "attn.k_norm.weight"] = t[b + "attn_k_norm.weight"]
        sd[h + "attn.out_proj.weight"] = t[b + "attn_output.weight"]
        sd[h + "ffn_norm.weight"] = t[b + "ffn_norm.weight"]
        sd[h + "ffn.proj_1.weight"] = np.concatenate([t[b + "ffn_gate.weight"], t[b + "ffn_up.weight"]])
        sd[h + "ffn.proj_2.weight"] = t[b + "ffn_down.weight"]
    return {k: torch.from_numpy(v) for k, v in sd.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf")
    ap.add_argument("--size", choices=sorted(openelm.SIZES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.model"))
    ap.add_argument("--elmchat", default=os.environ.get("ELMCHAT", os.path.join(HERE, "..", "..", "elmchat")))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        f32 = os.path.join(td, "f32.gguf")
        subprocess.run([a.elmchat, "quantize", a.gguf, f32, "--type", "f32", "--quiet"], check=True)
        tensors = read_gguf_f32(f32)
    cfg = openelm.hf_config(a.size, tensors["token_embd.weight"].shape[0])
    model = openelm.OpenELM(cfg)
    model.load_state_dict(hf_state(tensors, cfg), strict=True)
    openelm.save_hf(model, a.out, tokenizer=a.tokenizer)
    print(f"{a.out}: {openelm.n_params(model):,} parameters from {a.gguf}")


if __name__ == "__main__":
    main()
