#!/usr/bin/python3
"""eval's JSON files side by side, as the Markdown results table of README.md.

    /usr/bin/python3 tools/demo-model/results_table.py LABEL=FILE.json [LABEL=FILE.json ...]

FILE.json: what `eval MODEL --json FILE.json` wrote (its "summary").  One
column a file, in the order given (e.g. the shipped model before and after);
a set a file lacks is left blank.  The quantized and fidelity rows come from
an eval run with --quant / --fidelity.
"""
import json
import sys

# (row label, set, field, format)
ROWS = [
    ("identity, greetings, thanks, goodbye", "identity", "correct", "pct"),
    ("refusals", "refusal", "correct", "pct"),
    ("lexicon: gloss verbatim", "lexicon", "correct", "pct"),
    ("lexicon: well-formed", "lexicon", "well_formed", "pct"),
    ("guide, held-out (`eval_guide.tsv`)", "guide", "correct", "pct"),
    ("guide, fresh", "guide-fresh", "correct", "pct"),
    ("guide, blind (unseen)", "guide-blind", "correct", "pct_unseen"),
    ("guide, new facts (unseen)", "guide-new", "correct", "pct_unseen"),
    ("everyday words: expected reply", "everyday", "correct", "pct"),
    ("everyday words: a gloss given", "everyday", "defined", "pct"),
    ("long conversations: replies well-formed", "long", "well_formed", "pct"),
    ("... on turns 11-20", "long", "well_formed_turns_11_20", "pct"),
    ("... conversations with every reply well-formed", "long", "conversations_all_well_formed", "pct"),
    ("long conversations: the expected reply", "long", "correct", "pct"),
]


def pct(x):
    return f"{100 * x:.1f} %"


def cell(summary, kind, field, fmt):
    s = summary.get("sets", {}).get(kind)
    if not s or field not in s:
        return ""
    out = pct(s[field])
    if fmt == "pct_unseen" and "unseen" in s:
        u = s["unseen"]
        out += f" ({round(u['correct'] * u['n'])}/{u['n']})"
    return out


def n_of(summaries, kind, field):
    def n(x):
        if field == "conversations_all_well_formed":
            return x.get("conversations")
        if field == "well_formed_turns_11_20":  # turns 11-20 of each conversation
            return x.get("n_turns_11_20", 10 * x["conversations"] if "conversations" in x else None)
        return x.get("n")
    ns = {n(s.get("sets", {}).get(kind, {})) for s in summaries} - {None}
    return "/".join(str(n) for n in sorted(ns))


def table(columns):
    labels = [label for label, _ in columns]
    summaries = [s for _, s in columns]
    lines = ["| set | n | " + " | ".join(labels) + " |", "|---|---:|" + "---:|" * len(labels)]
    for label, kind, field, fmt in ROWS:
        cells = [cell(s, kind, field, fmt) for s in summaries]
        if any(cells):
            lines.append(f"| {label} | {n_of(summaries, kind, field)} | " + " | ".join(cells) + " |")
    for qt in ("q8_0", "q4_k"):
        cells = []
        for s in summaries:
            q = s.get("quant", {}).get(qt)
            cells.append(f"{pct(q['greedy_identical'])} ({pct(q['greedy_identical_single'])} single)"
                         if q and "greedy_identical_single" in q else pct(q["greedy_identical"]) if q else "")
        if any(cells):
            lines.append(f"| {qt} greedy identical to the model | | " + " | ".join(cells) + " |")
    cells = [f"{s['fidelity_max_abs_diff']:.2e}" if "fidelity_max_abs_diff" in s else "" for s in summaries]
    if any(cells):
        lines.append("| torch f32 vs `elmchat logits`, max abs diff | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2 or any("=" not in a for a in sys.argv[1:]):
        sys.exit(__doc__)
    columns = []
    for arg in sys.argv[1:]:
        label, _, path = arg.partition("=")
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"{path}: {e}")
        columns.append((label, data.get("summary", data)))
    print(table(columns))


if __name__ == "__main__":
    main()
