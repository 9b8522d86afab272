#!/usr/bin/python3
"""Grow the trained small model into the large shape, computing the same function.

    /usr/bin/python3 tools/demo-model/grow.py \
        tools/demo-model/out/models/guide-small-from-gguf-instruct \
        --out tools/demo-model/out/models/guide-large-grown-instruct --check tools/demo-model/out/corpus

Why: the large model from scratch needs about 3 epochs (2.2 hours with
AVX512_BF16, 5.5 in f32), more than a session leaves; grown from the small
one it starts at the small one's loss and trains onward from there.

How the function is kept (Net2Net-style widening and deepening):
- model dim 256 -> 384, the new residual channels zero: nothing writes them
  (their rows of out_proj, proj_2 are zero; the embedding's new columns get
  --noise, tiny, so they are not exactly symmetric);
- every RMSNorm over the model dim sees 384 entries where 256 carry the
  signal, so its weight is scaled by sqrt(256/384) to give the same output;
- small layer i becomes large layer round(i * 11 / 7) (0, 2, 3, 5, ..., 11),
  keeping its heads as the first heads (4 query heads per kv head in both
  sizes, so the GQA grouping matches) and its FFN units as the first units;
  new heads and units start random with zero output weights;
- the large layers in between are identities: random, with out_proj and
  proj_2 zero, so they learn from their first step.
--check CORPUS prints both models' loss on 200 validation dialogues.
"""
import argparse
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openelm  # noqa: E402


def layer_map(n_small, n_large):
    return {i: round(i * (n_large - 1) / (n_small - 1)) for i in range(n_small)}


def grow_layer(dst, src, ds, scale, what):
    """Copy the small Layer src into the large Layer dst, whose out_proj and
    proj_2 are zero; ds: the small model dim; what: "i -> j" for errors."""
    hd = src.attn.hd
    nq_s, nkv_s, nq_l, nkv_l = src.attn.nq, src.attn.nkv, dst.attn.nq, dst.attn.nkv
    if nq_s > nq_l or nkv_s > nkv_l or nq_s // nkv_s != nq_l // nkv_l:
        raise ValueError(f"layer {what}: heads {nq_s}/{nkv_s} do not fit {nq_l}/{nkv_l}")
    ff_s, ff_l = src.ffn.ff, dst.ffn.ff
    if ff_s > ff_l:
        raise ValueError(f"layer {what}: FFN {ff_s} does not fit {ff_l}")
    with torch.no_grad():
        for name in ("attn_norm", "ffn_norm"):
            getattr(dst, name).weight.fill_(scale)
            getattr(dst, name).weight[:ds] = getattr(src, name).weight * scale
        dst.attn.q_norm.weight.copy_(src.attn.q_norm.weight)
        dst.attn.k_norm.weight.copy_(src.attn.k_norm.weight)
        w_s, w_l = src.attn.qkv_proj.weight, dst.attn.qkv_proj.weight
        w_l[:, ds:] = 0
        # rows: query heads, then key heads, then value heads
        for off_s, off_l, n in ((0, 0, nq_s), (nq_s, nq_l, nkv_s), (nq_s + nkv_s, nq_l + nkv_l, nkv_s)):
            w_l[off_l * hd:(off_l + n) * hd, :ds] = w_s[off_s * hd:(off_s + n) * hd]
        dst.attn.out_proj.weight[:ds, :nq_s * hd] = src.attn.out_proj.weight
        p1_s, p1_l = src.ffn.proj_1.weight, dst.ffn.proj_1.weight
        p1_l[:, ds:] = 0
        p1_l[:ff_s, :ds] = p1_s[:ff_s]                     # gate
        p1_l[ff_l:ff_l + ff_s, :ds] = p1_s[ff_s:]          # up
        dst.ffn.proj_2.weight[:ds, :ff_s] = src.ffn.proj_2.weight


def grow(small, cl, noise):
    cs = small.cfg
    large = openelm.OpenELM(cl)     # random init (seeded by the caller)
    ds = cs["model_dim"]
    scale = math.sqrt(ds / cl["model_dim"])
    ts, tl = small.transformer, large.transformer
    mapped = layer_map(cs["num_transformer_layers"], cl["num_transformer_layers"])
    with torch.no_grad():
        tl.token_embeddings.weight.normal_(0.0, noise)
        tl.token_embeddings.weight[:, :ds] = ts.token_embeddings.weight
        tl.norm.weight.fill_(scale)
        tl.norm.weight[:ds] = ts.norm.weight * scale
        for layer in tl.layers:
            layer.attn.out_proj.weight.zero_()
            layer.ffn.proj_2.weight.zero_()
        for i_s, i_l in mapped.items():
            grow_layer(tl.layers[i_l], ts.layers[i_s], ds, scale, f"{i_s} -> {i_l}")
    return large, mapped


def val_loss(model, corpus, n):
    import train  # noqa: E402  (its loss, its batching)
    val = torch.load(os.path.join(corpus, "val.pt"))
    sub = {"ids": val["ids"][:n], "mask": val["mask"][:n]}
    return train.evaluate(model, sub, 8192, False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("small", help="the small model's f32 HF folder (gguf_to_hf.py)")
    ap.add_argument("--out", required=True, help="the grown model's HF folder (f32)")
    ap.add_argument("--size", default="large", choices=sorted(openelm.SIZES))
    ap.add_argument("--noise", type=float, default=1e-3, help="std of the embedding's new columns")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", metavar="CORPUS", help="print both models' loss on 200 validation dialogues")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.model"))
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    small = openelm.load_hf(a.small)
    cl = openelm.hf_config(a.size, small.cfg["vocab_size"])
    large, mapped = grow(small, cl, a.noise)
    print(f"{openelm.n_params(small):,} -> {openelm.n_params(large):,} parameters; layers "
          + ", ".join(f"{s}->{l}" for s, l in mapped.items()), flush=True)
    if a.check:
        print(f"val loss (200 dialogues): small {val_loss(small, a.check, 200):.5f}, "
              f"grown {val_loss(large, a.check, 200):.5f}", flush=True)
    openelm.save_hf(large, a.out, torch.float32, tokenizer=a.tokenizer)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
