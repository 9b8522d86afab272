#!/usr/bin/python3
"""Project the speed-up of draft-model speculative decoding to other sizes.

    tools/spec-project.py --spec SPEC.jsonl --verify VERIFY.jsonl --draft-ms D
                          [--step-ms S] [--json]

SPEC.jsonl: `elmchat bench --spec FILE --draft DRAFT -k 10 --json` on a pair
whose drafts agree as the projected pair's would (its total line gives, per
depth i, the passes that checked a draft's i-th id and those that kept it).
VERIFY.jsonl: `elmchat bench --verify --json` on the target to project (at its
shape and type: what a pass of k + 1 tokens costs in decode steps, v(k)).
--draft-ms: one decode step of the projected draft model (bench tgN: 1000 / t/s);
--step-ms: one of the target (default: the verify run's k = 0).

With a_i the measured acceptance at depth i (kept / checked), a pass of k
drafted ids yields E(k) = 1 + sum_{j=1..k} a_1 ... a_j tokens (the kept prefix,
and the target's own id after it) and costs k draft steps (the catch-up on the
last pass's ids and k - 1 proposals) and one verifying pass:
C(k) = k r + v(k) target steps, r = draft step / target step.  Plain decoding
gives one token a step, so S(k) = E(k) / C(k).  Printed for every k with data,
and the best (the adaptive k of the engine settles near it).  Left out: the
two plain steps a reply starts with and the draft's catch-up on a new prompt
(both per reply, not per token).
"""
import argparse
import json
import sys


def read_lines(path):
    with open(path) as f:
        out = []
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
        return out


def profile(spec_path):
    totals = [d for d in read_lines(spec_path) if d.get("total")]
    if not totals:
        sys.exit(f"{spec_path}: no total line (elmchat bench --spec ... --json)")
    t = totals[-1]
    rates = []
    for reached, kept in zip(t.get("reached", []), t.get("kept", [])):
        if reached <= 0:
            break
        rates.append(kept / reached)
    if not rates:
        sys.exit(f"{spec_path}: no drafts were checked")
    return rates, t


def verify_curve(verify_path):
    v = {d["k"]: d for d in read_lines(verify_path) if d.get("test") == "verify"}
    if 0 not in v:
        sys.exit(f"{verify_path}: no verify lines (elmchat bench --verify --json)")
    return {k: d["of_one_step"] for k, d in v.items()}, v[0]["ms"]


def project(rates, v, r):
    rows = []
    reach = 1.0
    expected = 1.0
    for k in range(1, len(rates) + 1):
        if k not in v:
            break
        reach *= rates[k - 1]
        expected += reach
        cost = k * r + v[k]
        rows.append({"k": k, "tokens_per_pass": expected, "cost_steps": cost,
                     "speedup": expected / cost})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--verify", required=True)
    ap.add_argument("--draft-ms", type=float, required=True)
    ap.add_argument("--step-ms", type=float)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rates, total = profile(a.spec)
    v, step0 = verify_curve(a.verify)
    step = a.step_ms or step0
    if not (step > 0 and a.draft_ms > 0):
        sys.exit("the step times must be positive")
    r = a.draft_ms / step
    rows = project(rates, v, r)
    if not rows:
        sys.exit(f"{a.verify}: no k >= 1")
    best = max(rows, key=lambda x: x["speedup"])
    if a.json:
        print(json.dumps({"rates": rates, "r": r, "rows": rows, "best": best}))
        return
    print(f"acceptance by depth ({total.get('prompts', '?')} prompts): "
          + " ".join(f"{x:.3f}" for x in rates))
    print(f"draft step {a.draft_ms:.2f} ms, target step {step:.2f} ms: r = {r:.3f}")
    print("|  k | tokens a pass | cost (steps) | speed-up |")
    print("|---:|---:|---:|---:|")
    for x in rows:
        print(f"| {x['k']:2d} | {x['tokens_per_pass']:.2f} | {x['cost_steps']:.2f} | "
              f"{x['speedup']:.2f}x |")
    print(f"best: k = {best['k']}, {best['speedup']:.2f}x")


if __name__ == "__main__":
    main()
