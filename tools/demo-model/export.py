#!/usr/bin/python3
"""Export a trained demo model: a Hugging Face folder, and GGUF files.

    /usr/bin/python3 tools/demo-model/export.py --size small [--from CKPT_OR_FOLDER]
        [--out DIR] [--dtype f32|bf16] [--gguf q8_0,q4_k] [--elmchat BIN]

--from: runs/SIZE/final (default when it exists), else runs/SIZE/ckpt.pt.
--out:  default tools/demo-model/out/models/guide-SIZE-instruct (the name
        holds "instruct", so elmchat picks the openelm-instruct template).
Writes config.json (the Hub's OpenELM keys), model.safetensors,
generation_config.json (greedy, repetition penalty 1.0: a dictionary must
repeat the asked word), tokenizer.model; with --gguf, OUT-TYPE.gguf for each
type via `elmchat quantize` from an f32 copy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openelm  # noqa: E402

DT = {"f32": torch.float32, "bf16": torch.bfloat16}


def load_model(src):
    if os.path.isdir(src):
        return openelm.load_hf(src)
    ck = torch.load(src)
    m = openelm.OpenELM(ck["config"])
    m.load_state_dict(ck["model"])
    print(f"{src}: step {ck['step']} of {ck['settings']['total_steps']}", file=sys.stderr)
    return m


def write_generation_config(folder):
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2,
                   "do_sample": False, "repetition_penalty": 1.0, "max_new_tokens": 256,
                   "transformers_version": "4.39.3"}, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(openelm.SIZES), default="small")
    ap.add_argument("--from", dest="src")
    ap.add_argument("--out")
    ap.add_argument("--dtype", choices=sorted(DT), default="f32")
    ap.add_argument("--gguf", default="", help="comma-separated types, e.g. q8_0,q4_k")
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.model"))
    ap.add_argument("--elmchat", default=os.environ.get("ELMCHAT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "elmchat")))
    a = ap.parse_args()
    run = os.path.join(HERE, "runs", a.size)
    src = a.src or (os.path.join(run, "final") if os.path.isdir(os.path.join(run, "final"))
                    else os.path.join(run, "ckpt.pt"))
    out = a.out or os.path.join(HERE, "out", "models", f"guide-{a.size}-instruct")
    m = load_model(src).eval()
    openelm.save_hf(m, out, DT[a.dtype], tokenizer=a.tokenizer)
    write_generation_config(out)
    print(f"{out}: {openelm.n_params(m):,} parameters, "
          f"{os.path.getsize(os.path.join(out, 'model.safetensors')):,} bytes ({a.dtype})")
    types = [t for t in a.gguf.split(",") if t]
    if types:
        with tempfile.TemporaryDirectory() as td:
            f32 = out
            if a.dtype != "f32":
                f32 = os.path.join(td, "f32")
                openelm.save_hf(m, f32, torch.float32, tokenizer=a.tokenizer)
                write_generation_config(f32)  # the GGUF keeps it as general.sampling.*
            for t in types:
                path = f"{out}-{t}.gguf"
                subprocess.run([a.elmchat, "quantize", f32, path, "--type", t, "--quiet"], check=True)
                print(f"{path}: {os.path.getsize(path):,} bytes")


if __name__ == "__main__":
    main()
