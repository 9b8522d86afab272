#!/usr/bin/python3
"""A shipped demo GGUF back to an f32 Hugging Face folder, to train on from it.

    /usr/bin/python3 tools/demo-model/gguf_to_hf.py models/guide-small-instruct.gguf \
        --size small --out tools/demo-model/out/models/guide-small-from-gguf-instruct

The weights are the GGUF's dequantized ones (read by the project's own
independent reader, tests/reference/gguf_ref.py): what `--init` needs when a
machine has lost runs/ and only the shipped file is left.  The config comes
from openelm.hf_config(SIZE); the GGUF's tensor shapes must match it.
"""
import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "reference"))
import gguf_ref  # noqa: E402
import openelm  # noqa: E402


def hf_state(t, cfg):
    """GGUF tensors (llama.cpp's OpenELM names, a lookup by name) -> the Hub's."""
    sd = {"transformer.token_embeddings.weight": t("token_embd.weight"),
          "transformer.norm.weight": t("output_norm.weight")}
    for i in range(cfg["num_transformer_layers"]):
        b, h = f"blk.{i}.", f"transformer.layers.{i}."
        sd[h + "attn_norm.weight"] = t(b + "attn_norm.weight")
        sd[h + "attn.qkv_proj.weight"] = t(b + "attn_qkv.weight")
        sd[h + "attn.q_norm.weight"] = t(b + "attn_q_norm.weight")
        sd[h + "attn.k_norm.weight"] = t(b + "attn_k_norm.weight")
        sd[h + "attn.out_proj.weight"] = t(b + "attn_output.weight")
        sd[h + "ffn_norm.weight"] = t(b + "ffn_norm.weight")
        sd[h + "ffn.proj_1.weight"] = np.concatenate([t(b + "ffn_gate.weight"), t(b + "ffn_up.weight")])
        sd[h + "ffn.proj_2.weight"] = t(b + "ffn_down.weight")
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in sd.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf")
    ap.add_argument("--size", choices=sorted(openelm.SIZES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.model"))
    a = ap.parse_args()
    r = gguf_ref.Reader(a.gguf)
    cfg = openelm.hf_config(a.size, r.tensors["token_embd.weight"][0][1])
    model = openelm.OpenELM(cfg)
    model.load_state_dict(hf_state(r.tensor, cfg), strict=True)
    openelm.save_hf(model, a.out, tokenizer=a.tokenizer)
    print(f"{a.out}: {openelm.n_params(model):,} parameters from {a.gguf}")


if __name__ == "__main__":
    main()
