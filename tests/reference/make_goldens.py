#!/usr/bin/python3
"""Regenerate tests/data/golden/ from checkpoints written by tests/lib/gen-checkpoint.

For every case below this script
  1. runs the C generator (tests/lib/gen-checkpoint.c) into a temporary folder,
  2. loads the checkpoint with the independent float64 reference
     (openelm_ref.py, itself verified against the shared fixtures by
     check_shared_fixtures.py),
  3. writes tests/data/golden/CASE.json and CASE.logits.f32.

The checkpoints themselves are not committed: the C tests regenerate them at
check time with the same generator arguments (stored in the JSON as
"gen_args") and can compare file sizes / SHA-256 ("checkpoint_files").

Usage:
    tests/reference/make_goldens.py [--gen PATH_TO_gen-checkpoint] [--out DIR]
Without --gen the generator is compiled from tests/lib/gen-checkpoint.c with
${CC:-cc} into a temporary folder.  Needs numpy (Debian: python3-numpy).
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from openelm_ref import OpenELM, read_weights  # noqa: E402

FORMAT = "elmchat-golden-1"
SEED = 1
N_GREEDY = 16
N_PROMPT = 18           # BOS + 17 tokens
MIN_GAP = 0.02          # every argmax / greedy step must win by this much
TOL_ABS_LOGIT = 2e-3

# name, preset, dtype, shards; cases sharing a preset share the prompt
CASES = [
    ("micro-f32", "micro", "f32", 1),
    ("micro-bf16", "micro", "bf16", 1),
    ("micro-f16", "micro", "f16", 1),
    ("micro-bf16-3shards", "micro", "bf16", 3),
    ("varied-f32", "varied", "f32", 1),
]


def gen_args(preset, dtype, shards, seed):
    return ["--preset", preset, "--dtype", dtype, "--shards", str(shards),
            "--seed", str(seed)]


def build_generator(tmp):
    cc = os.environ.get("CC", "cc")
    exe = os.path.join(tmp, "gen-checkpoint")
    cmd = [cc, "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", exe,
           os.path.join(TOP, "tests", "lib", "gen-checkpoint.c"), "-lm"]
    print("+", " ".join(cmd))
    subprocess.check_call(cmd)
    return exe


def file_digests(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        out[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


def rne_bf16(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def candidate_prompt(vocab, attempt):
    """BOS + N_PROMPT-1 tokens; attempt 0 is a fixed list, then seeded draws."""
    fixed = [400, 29, 590, 1000, 338, 99, 13, 450, 1023, 2, 17, 300, 301, 302,
             13, 13, 800]
    if attempt == 0:
        body = [t % vocab for t in fixed]
    else:
        rs = np.random.RandomState(attempt)
        body = [int(t) for t in rs.randint(3, vocab, size=N_PROMPT - 1)]
    return [1] + body


def analyse(model, tokens):
    lg = model.logits(tokens)
    srt = np.sort(lg, axis=1)
    gaps = srt[:, -1] - srt[:, -2]
    new, ggaps, tops = model.greedy(tokens, N_GREEDY)
    return lg, gaps, (new, ggaps, tops)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gen", help="path to a built tests/lib/gen-checkpoint")
    ap.add_argument("--out", default=os.path.join(TOP, "tests", "data", "golden"))
    ap.add_argument("--keep", help="keep the generated checkpoints in this folder")
    args = ap.parse_args(argv[1:])

    tmp = tempfile.mkdtemp(prefix="elm-goldens-")
    try:
        gen = args.gen or build_generator(tmp)
        ckdir = args.keep or tmp
        os.makedirs(ckdir, exist_ok=True)
        os.makedirs(args.out, exist_ok=True)

        # 1. generate every checkpoint
        folders = {}
        for name, preset, dtype, shards in CASES:
            d = os.path.join(ckdir, name)
            if os.path.exists(d):
                shutil.rmtree(d)
            cmd = [gen] + gen_args(preset, dtype, shards, SEED) + ["-o", d]
            print("+", " ".join(cmd))
            subprocess.check_call(cmd)
            folders[name] = d

        # 2. cross-checks of the generator itself
        w32 = read_weights(folders["micro-f32"])
        wb = read_weights(folders["micro-bf16"])
        wh = read_weights(folders["micro-f16"])
        ws = read_weights(folders["micro-bf16-3shards"])
        for k, v in w32.items():
            assert np.array_equal(rne_bf16(v), wb[k]), "bf16 != RNE(f32) for " + k
            assert np.array_equal(v.astype(np.float32).astype(np.float16)
                                  .astype(np.float64), wh[k]), "f16 != RNE(f32) for " + k
            assert np.array_equal(wb[k], ws[k]), "3-shard bf16 != 1-shard bf16 for " + k
        print("generator cross-checks: bf16 == RNE(f32), f16 == RNE(f32), "
              "3 shards == 1 shard: OK")

        # 3. pick one prompt per preset with comfortable top-2 gaps everywhere
        models = {name: OpenELM(folders[name]) for name, _, _, _ in CASES}
        prompts = {}
        results = {}
        for preset in sorted(set(c[1] for c in CASES)):
            names = [c[0] for c in CASES if c[1] == preset]
            vocab = models[names[0]].cfg.vocab
            for attempt in range(200):
                toks = candidate_prompt(vocab, attempt)
                res = {n: analyse(models[n], toks) for n in names}
                worst = min(min(r[1].min(), min(r[2][1])) for r in res.values())
                if worst >= MIN_GAP:
                    break
            else:
                raise SystemExit("no prompt with top-2 gaps >= %g for %s" % (MIN_GAP, preset))
            print("%s: prompt attempt %d, smallest top-2 gap %.4f" % (preset, attempt, worst))
            prompts[preset] = (toks, attempt)
            results.update(res)

        # 4. write the goldens
        for name, preset, dtype, shards in CASES:
            model = models[name]
            c = model.cfg
            toks, attempt = prompts[preset]
            lg, gaps, (new, ggaps, tops) = results[name]
            T = len(toks)
            rows_at = [0, T // 2]
            binname = name + ".logits.f32"
            lg.astype("<f4").tofile(os.path.join(args.out, binname))
            doc = {
                "format": FORMAT,
                "generator": "tests/reference/make_goldens.py: float64 NumPy reference "
                             "tests/reference/openelm_ref.py on a checkpoint written by "
                             "tests/lib/gen-checkpoint",
                "name": name,
                "checkpoint": {"preset": preset, "dtype": dtype, "shards": shards,
                               "seed": SEED},
                "gen_args": gen_args(preset, dtype, shards, SEED),
                "checkpoint_files": file_digests(folders[name]),
                "summary": {
                    "num_layers": c.n_layers, "model_dim": c.d, "head_dim": c.hd,
                    "vocab_size": c.vocab, "num_query_heads": c.nq,
                    "num_kv_heads": c.nkv, "ffn_dims": c.ffn,
                    "rope_theta": c.theta, "rms_eps": 1e-6, "tied_head": True,
                },
                "compute": "float64 NumPy from the stored weight values; RoPE angles "
                           "in float32 as HF",
                "tokens": toks,
                "bos_prepended": True,
                "prompt_attempt": attempt,
                "n_positions": T,
                "argmax": [int(i) for i in lg.argmax(axis=1)],
                "top2_gap": [float(g) for g in gaps],
                "logit_std": [float(s) for s in lg.std(axis=1)],
                "last_logits": [float(v) for v in lg[-1]],
                "rows": [{"pos": p, "logits": [float(v) for v in lg[p]]} for p in rows_at],
                "logits_f32": {"file": binname, "shape": [T, c.vocab],
                               "layout": "row-major [position][vocab], little-endian IEEE "
                                         "float32 (the float64 values rounded)"},
                "greedy": {"n": N_GREEDY, "new_tokens": new,
                           "top2_gap": ggaps, "top_logit": tops,
                           "how": "prefill the prompt, then one decode step per token "
                                  "(no EOS stop); ties -> lowest id"},
                "tolerance": {"abs_logit": TOL_ABS_LOGIT,
                              "note": "max |logit - golden| for an engine computing in "
                                      "f32 from the stored (widened) weights; argmax and "
                                      "greedy tokens must be identical (all top-2 gaps "
                                      ">= %g)" % MIN_GAP},
            }
            path = os.path.join(args.out, name + ".json")
            with open(path, "w") as f:
                # one top-level key per line, values compact
                f.write("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(v))
                                            for k, v in doc.items()) + "\n}\n")
            print("wrote %s (%d bytes) and %s (%d bytes)" % (
                path, os.path.getsize(path), binname,
                os.path.getsize(os.path.join(args.out, binname))))
    finally:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
