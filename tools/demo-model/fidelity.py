#!/usr/bin/python3
"""Torch f32 logits vs `elmchat logits --all` on an f32 Hugging Face folder.

    /usr/bin/python3 tools/demo-model/fidelity.py MODEL_DIR [--elmchat BIN] [--tokens 1,2,3]

Without --tokens: a rendered corpus dialogue (val.pt) and a random id list.
Prints max |difference| per sequence and overall; exit 1 above 1e-4.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openelm  # noqa: E402


def engine_logits(elmchat, model_dir, ids, vocab):
    with tempfile.NamedTemporaryFile(suffix=".f32") as f:
        subprocess.run([elmchat, "logits", "-m", model_dir, "--tokens", ",".join(map(str, ids)),
                        "--all", "-o", f.name], check=True, stdout=subprocess.DEVNULL)
        return np.fromfile(f.name, dtype="<f4").reshape(len(ids), vocab)


def check(model_dir, elmchat, seqs):
    torch.set_num_threads(1)
    m = openelm.load_hf(model_dir).eval()
    V = m.cfg["vocab_size"]
    worst = 0.0
    for ids in seqs:
        with torch.no_grad():
            t = m(torch.tensor([ids])).double().numpy()[0]
        e = engine_logits(elmchat, model_dir, ids, V)
        d = float(np.abs(t - e).max())
        worst = max(worst, d)
        print(f"len {len(ids):4d}  max|diff| {d:.3g}  (logit std {t.std():.3g})")
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--elmchat", default=os.environ.get("ELMCHAT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "elmchat")))
    ap.add_argument("--tokens")
    ap.add_argument("--corpus", default=os.path.join(HERE, "out", "corpus", "val.pt"))
    a = ap.parse_args()
    if a.tokens:
        seqs = [[int(x) for x in a.tokens.replace(",", " ").split()]]
    else:
        val = torch.load(a.corpus)
        seqs = [val["ids"][i].long().tolist() for i in (0, 1, 2)]
        import json
        V = json.load(open(os.path.join(a.model_dir, "config.json")))["vocab_size"]
        rng = np.random.default_rng(0)
        seqs.append([1] + rng.integers(3, V, 300).tolist())
    worst = check(a.model_dir, a.elmchat, seqs)
    print(f"max |engine - torch| = {worst:.3g}")
    sys.exit(0 if worst <= 1e-4 else 1)


if __name__ == "__main__":
    main()
