#!/usr/bin/python3
"""The training log as a small Markdown table (loss curve), for notes.

    /usr/bin/python3 tools/demo-model/summarize_log.py [--size small] [--rows 12]
"""
import argparse
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small")
    ap.add_argument("--rows", type=int, default=12)
    a = ap.parse_args()
    run = os.path.join(HERE, "runs", a.size)
    # A resume repeats the steps after its checkpoint: the later rows are the run's.
    by_step = {int(r["step"]): r for r in csv.DictReader(open(os.path.join(run, "log.tsv")), delimiter="\t")}
    rows = [by_step[k] for k in sorted(by_step)]
    val = {int(r["step"]): float(r["val_loss"])
           for r in csv.DictReader(open(os.path.join(run, "val.tsv")), delimiter="\t")}
    if not rows:
        return
    n = len(rows)
    picks = sorted(set([max(1, round(n * i / a.rows)) for i in range(1, a.rows + 1)]))
    print("| step | epoch | lr | train loss (mean of 50) | val loss | wall (min) | tokens/s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for p in picks:
        r = rows[p - 1]
        win = rows[max(0, p - 50):p]
        mean = sum(float(x["loss"]) for x in win) / len(win)
        tps = sum(int(x["batch_tokens"]) for x in win) / max(
            1e-9, float(win[-1]["wall_s"]) - (float(rows[p - 51]["wall_s"]) if p > 50 else 0.0))
        step = int(r["step"])
        v = max((s for s in val if s <= step), default=None)
        vs = f"{val[v]:.4f} (step {v})" if v else ""
        print(f"| {step} | {r['epoch']} | {float(r['lr']):.2e} | {mean:.4f} | {vs} | "
              f"{float(r['wall_s']) / 60:.1f} | {tps:.0f} |")


if __name__ == "__main__":
    main()
