#!/usr/bin/python3
"""Check tests/reference/openelm_ref.py against a fixture folder that holds an
OpenELM checkpoint plus expected.json (the format of the shared fixtures,
copied to tests/data/fixtures/).

Usage: check_shared_fixtures.py FIXTURE_DIR [FIXTURE_DIR...]
Prints the measured maximum errors; exit status 1 if any exceeds the
fixture's tolerance (tolerance.abs_logit) or a greedy token differs.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openelm_ref import OpenELM  # noqa: E402


def check(folder):
    with open(os.path.join(folder, "expected.json")) as f:
        exp = json.load(f)
    tol = float(exp["tolerance"]["abs_logit"])
    model = OpenELM(folder)
    toks = exp["tokens"]
    lg = model.logits(toks)
    ok = True

    err_last = float(np.max(np.abs(lg[-1] - np.asarray(exp["last_logits"]))))
    err_probe = 0.0
    err_top5 = 0.0
    err_stats = 0.0
    argmax_ok = True
    for p in exp["positions"]:
        row = lg[p["pos"]]
        err_probe = max(err_probe, float(np.max(np.abs(
            row[np.asarray(p["probe_ids"])] - np.asarray(p["probe_logits"])))))
        for tid, val in p["top5"]:
            err_top5 = max(err_top5, abs(row[tid] - val))
        lse = row.max() + np.log(np.sum(np.exp(row - row.max())))
        err_stats = max(err_stats, abs(lse - p["logsumexp"]),
                        abs(row.mean() - p["mean"]), abs(row.std() - p["std"]))
        if int(np.argmax(row)) != p["argmax"]:
            argmax_ok = False
    g = exp["greedy"]
    new, gaps, tops = model.greedy(toks, int(g["n"]))
    greedy_ok = new == g["new_tokens"]
    err_gap = max(abs(a - b) for a, b in zip(gaps, g["top2_gap"]))
    err_top = max(abs(a - b) for a, b in zip(tops, g["top_logit"])) if "top_logit" in g else 0.0

    print("%s:" % folder)
    print("  max |err| last_logits    %.3e  (%d entries)" % (err_last, len(exp["last_logits"])))
    print("  max |err| probe_logits   %.3e  (positions %s)"
          % (err_probe, [p["pos"] for p in exp["positions"]]))
    print("  max |err| top5 logits    %.3e" % err_top5)
    print("  max |err| lse/mean/std   %.3e" % err_stats)
    print("  max |err| greedy top/gap %.3e / %.3e" % (err_top, err_gap))
    print("  argmax per probed position: %s" % ("identical" if argmax_ok else "DIFFERENT"))
    print("  greedy tokens (%d): %s" % (len(new), "identical" if greedy_ok else
                                         "DIFFERENT %s vs %s" % (new, g["new_tokens"])))
    print("  tolerance abs_logit %.1e" % tol)
    worst = max(err_last, err_probe, err_top5, err_top)
    if worst >= tol or not greedy_ok or not argmax_ok:
        ok = False
    print("  %s" % ("PASS" if ok else "FAIL"))
    return ok


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    ok = True
    for folder in argv[1:]:
        ok = check(folder) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
