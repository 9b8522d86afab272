#!/usr/bin/python3
"""Validation loss of exported models, on the dialogues no lineage trained on.

    /usr/bin/python3 tools/demo-model/val_loss.py MODEL... [--corpus out/corpus]
        [--seen out/corpus6 --seen out/corpus5 ...]

A model trained onward from an older corpus has seen some of this corpus's
validation dialogues: up to corpus 6 the split hashed the dialogue's index, so
new dialogues moved old training ones across it (corpus 7 hashes the text).
--seen CORPUS, once for each older corpus the model's lineage trained on,
keeps only the validation dialogues that are in none of those training
splits, nor in this corpus's own (the generator repeats some).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openelm  # noqa: E402
import train  # noqa: E402


def dialogue_texts(corpus, name):
    with open(os.path.join(corpus, name + ".jsonl")) as f:
        return [json.dumps(json.loads(line)["messages"]) for line in f]


def unseen_subset(corpus, seen_corpora):
    seen = set(dialogue_texts(corpus, "train"))
    for c in seen_corpora:
        seen.update(dialogue_texts(c, "train"))
    texts = dialogue_texts(corpus, "val")
    val = torch.load(os.path.join(corpus, "val.pt"))
    if len(val["ids"]) != len(texts):
        sys.exit(f"{corpus}: val.pt and val.jsonl disagree; rebuild the corpus")
    keep = [i for i, t in enumerate(texts) if t not in seen]
    return val, {"ids": [val["ids"][i] for i in keep], "mask": [val["mask"][i] for i in keep]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+", help="Hugging Face folders (export.py)")
    ap.add_argument("--corpus", default=os.path.join(HERE, "out", "corpus"))
    ap.add_argument("--seen", action="append", default=[], metavar="CORPUS",
                    help="an older corpus whose training split the models' lineage saw")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    full, sub = unseen_subset(a.corpus, a.seen)
    tokens = sum(int(m.sum()) for m in sub["mask"])
    print(f"{a.corpus}: {len(sub['ids'])} of {len(full['ids'])} validation dialogues unseen ({tokens} loss tokens)")
    bf16 = train.cpu_has_bf16()
    for m in a.models:
        model = openelm.load_hf(m)
        print(f"{m}: val {train.evaluate(model, full, 8192, bf16):.4f}, "
              f"unseen {train.evaluate(model, sub, 8192, bf16):.4f}", flush=True)


if __name__ == "__main__":
    main()
