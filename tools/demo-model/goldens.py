#!/usr/bin/python3
"""The goldens of make check's guide-model test: 23 fixed prompts, the greedy
reply of the training framework (torch, f32 weights) and of the engine
(`elmchat run` / `elmchat generate` on the shipped file), which must be equal.

    /usr/bin/python3 tools/demo-model/goldens.py \
        --torch tools/demo-model/out/models/guide-small-c6-instruct \
        --shipped models/guide-small-instruct.gguf --out tests/data/guide/small.tsv

Writes PROMPT<TAB>REPLY lines (REPLY with \\n for newlines and \\\\ for
backslashes); exits 1 (writing nothing) when torch and the engine disagree
on any prompt.  The prompts: greetings, identity, a refusal, guide questions
held out of training, definitions of lexicon words.
"""
import argparse
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_corpus as bc  # noqa: E402
import openelm  # noqa: E402

PROMPTS = [
    "Hello!",
    "Who are you?",
    "What can you do?",
    "Thanks!",
    "What is the capital of France?",
    "Write me a poem about the sea.",
    "how do I quit elmchat",
    "How do I switch to another model?",
    "How can I save this conversation?",
    "which key stops the reply",
    "What does the word good mean?",
    "Define water.",
    "What is a house?",
    "What does run mean?",
    "Meaning of the word bright?",
    "What does the word give mean?",
    "Define ancient.",
    "What is a friend?",
    "What does small mean?",
    "What does the word time mean?",
    # corpus 9: an everyday word, an inflected form, a reply with a code block
    "What does dog mean?",
    "What does went mean?",
    "How do I make my own template?",
]
MAX_NEW = 200


def torch_greedy(model, prompt_ids):
    ids = list(prompt_ids)
    out = []
    with torch.no_grad():
        for _ in range(MAX_NEW):
            logits = model(torch.tensor([ids]))[0, -1]
            t = int(torch.argmax(logits))  # first maximum: the lowest id, as the engine
            out.append(t)
            if t == 2:
                break
            ids.append(t)
    return out


def escape(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch", required=True, help="f32 Hugging Face folder (the trained weights)")
    ap.add_argument("--shipped", required=True, help="the model file or folder elmchat ships")
    ap.add_argument("--out", required=True)
    ap.add_argument("--elmchat", default=os.environ.get("ELMCHAT", os.path.join(HERE, "..", "..", "elmchat")))
    a = ap.parse_args()
    torch.set_num_threads(1)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(a.torch, "tokenizer.model"))
    R = bc.Renderer(sp)
    model = openelm.load_hf(a.torch).eval()
    lines, bad = [], 0
    for q in PROMPTS:
        ids, _ = R.render([(q, "")])
        prompt = ids[:-1]
        t_ids = torch_greedy(model, prompt)
        # The engine with the model's own sampling defaults (greedy, no penalty).
        common = ["-m", a.shipped, "-n", str(MAX_NEW), "--threads", "1"]
        # generate is the raw engine (its own defaults): greedy, no penalty, said.
        g = subprocess.run([a.elmchat, "generate", "--tokens", ",".join(map(str, prompt)),
                            "--temp", "0", "--repeat-penalty", "1"] + common,
                           capture_output=True, check=True).stdout.decode().split()
        e_ids = [int(x) for x in g]
        text = subprocess.run([a.elmchat, "run", "-p", q] + common, capture_output=True,
                              check=True).stdout.decode("utf-8")
        if text.endswith("\n"):
            text = text[:-1]
        t_text = sp.decode([i for i in t_ids if i != 2])
        same = t_ids == e_ids and t_text == text
        bad += not same
        print(f"{'same' if same else 'DIFF'}  {q!r} -> {text!r}" +
              ("" if same else f"\n      torch: {t_text!r}"))
        lines.append(f"{q}\t{escape(text)}\n")
    if bad:
        print(f"{bad} of {len(PROMPTS)} prompts differ: no goldens written", file=sys.stderr)
        sys.exit(1)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("# tools/demo-model/goldens.py: prompt, greedy reply (torch == elmchat)\n")
        f.writelines(lines)
    print(f"{a.out}: {len(lines)} goldens")


if __name__ == "__main__":
    main()
