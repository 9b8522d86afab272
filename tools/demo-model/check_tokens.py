#!/usr/bin/python3
"""The corpus's token ids vs elmchat's.

    /usr/bin/python3 tools/demo-model/check_tokens.py [--lines 300] [--dialogues 40]

1. `elmchat tokenize --tokenizer tokenizer.model` == python sentencepiece on
   sampled corpus lines (as whole runs, with the dummy prefix).
2. `elmchat run --dry-run` on one-turn prompts == the ids build_corpus.py
   trains on (the prompt part of a rendered dialogue).
Exit 1 on any difference.
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "out", "corpus"))
    ap.add_argument("--elmchat", default=os.environ.get("ELMCHAT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "elmchat")))
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--dialogues", type=int, default=40)
    a = ap.parse_args()
    import sentencepiece as spm
    tokm = os.path.join(a.corpus, "tokenizer.model")
    sp = spm.SentencePieceProcessor(model_file=tokm)
    rng = random.Random(7)
    dialogues = [json.loads(l) for l in open(os.path.join(a.corpus, "val.jsonl"))]
    texts = []
    for d in rng.sample(dialogues, min(len(dialogues), a.lines)):
        m = rng.choice(d["messages"])
        texts.append(rng.choice([m[1], "\n<|user|>\n" + m[1], "\n<|assistant|>\n" + m[1]]))
    # and every multi-line guide answer (markdown: code blocks, numbered steps) as a reply
    texts += ["\n<|assistant|>\n" + a for _, a, _ in build_corpus.guide_data.FACTS if "\n" in a]
    bad = 0
    for t in texts:
        out = subprocess.run([a.elmchat, "tokenize", "--tokenizer", tokm], input=t.encode(),
                             capture_output=True, check=True).stdout.decode().split()
        if [int(x) for x in out] != sp.encode(t):
            bad += 1
            print("tokenize differs:", repr(t), out, sp.encode(t))
    print(f"tokenize: {len(texts) - bad}/{len(texts)} equal")
    R = build_corpus.Renderer(sp)
    bad2 = 0
    for d in rng.sample(dialogues, a.dialogues):
        q = d["messages"][0][1]
        ids, _ = R.render([(q, "")])
        want = ids[:-1]  # up to the generation prompt (reply "" is just EOS)
        want = want[:len(want) - len(R.reply("\n<|assistant|>\n", ""))]
        out = subprocess.run([a.elmchat, "run", "--dry-run", "--tokenizer", tokm, "-t", "openelm-instruct",
                              "-p", q], capture_output=True, check=True).stdout.decode()
        got = [int(x) for x in out.replace(",", " ").split() if x.lstrip("-").isdigit()]
        if got != want:
            bad2 += 1
            print("dry-run differs:", repr(q), got, want)
    print(f"dry-run: {a.dialogues - bad2}/{a.dialogues} equal")
    sys.exit(1 if bad or bad2 else 0)


if __name__ == "__main__":
    main()
