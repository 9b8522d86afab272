#!/usr/bin/python3
"""Train a demo OpenELM model; resumes from its latest checkpoint by itself.

    /usr/bin/python3 tools/demo-model/train.py --size small     # or --size large

Run tools/demo-model/build_corpus.py first.  Everything goes to
tools/demo-model/runs/SIZE/: ckpt.pt (atomic, every --ckpt-minutes), log.tsv
(loss per step), val.tsv (validation loss), final/ (f32 HF folder at the end).
The run's settings are fixed at its first start and stored in the checkpoint;
re-running the same command continues exactly (model, optimizer, schedule step,
data order).  bf16 autocast with f32 master weights where the CPU has
AVX512_BF16, plain f32 elsewhere (--precision); 1 thread by default.
--init FOLDER starts a new run (its own --run folder) from trained weights:
more epochs for a finished run, with a fresh optimizer and schedule.
--corpus A,B,...: epoch e trains on the (e mod n)-th corpus (the same facts
and words in other phrasings: build_corpus.py --seed S --split-seed 1234);
validation, the vocabulary and the tokenizer are the first one's.
Past --max-rss-gb (half the memory) the process checkpoints and goes on in a
fresh one: it grows by some MB a step.
"""
import argparse
import fcntl
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import openelm  # noqa: E402

DEFAULTS = {
    # The shipped small model: these 2 epochs, then one more from their
    # weights (--init, README.md).  From scratch the large one needs 3
    # epochs to beat it (2.2 hours with AVX512_BF16, 5.5 in f32), so the
    # shipped one starts from the small one grown (grow.py, --init) and
    # trains a shorter schedule (--lr, --warmup, --total-steps).
    "small": dict(lr=2e-3, epochs=2, batch_tokens=6144, warmup=300),
    "large": dict(lr=1e-3, epochs=3, batch_tokens=8192, warmup=300),
}


def batches_for_epoch(lengths, epoch, seed, batch_tokens, items=None):
    """Deterministic: shuffle, sort by length within chunks, cut batches by
    padded size, shuffle the batches.  items: the dialogue indices of an
    epoch, some more than once (--repeat-kinds); default each once."""
    rng = random.Random(seed * 1000003 + epoch)
    idx = list(items) if items is not None else list(range(len(lengths)))
    rng.shuffle(idx)
    out = []
    chunk = 2048
    for c in range(0, len(idx), chunk):
        part = sorted(idx[c:c + chunk], key=lambda i: lengths[i])
        cur, mx = [], 0
        for i in part:
            m2 = max(mx, lengths[i])
            if cur and m2 * (len(cur) + 1) > batch_tokens:
                out.append(cur)
                cur, mx = [], 0
                m2 = lengths[i]
            cur.append(i)
            mx = m2
        if cur:
            out.append(cur)
    rng.shuffle(out)
    return out


def epoch_items(kinds, repeat):
    """Each dialogue once, those of the kinds in `repeat` (kind -> times) that
    many times.  Why: greetings, thanks, goodbyes and identity questions are
    0.4 % of the corpus but the first thing a newcomer types."""
    return [i for i, k in enumerate(kinds) for _ in range(repeat.get(k, 1))]


def parse_repeat(text, kinds=None):
    """"greet,thanks=20" -> {"greet": 20, "thanks": 20}: every kind before an =N
    takes N.  ValueError on a group without =N (N >= 1) or, given the corpus's
    kinds, a kind it does not have."""
    out = {}
    for group in text.split(";") if text else ():
        names, eq, n = group.partition("=")
        if not eq or not n.strip().isdigit() or int(n) < 1:
            raise ValueError(f"{group!r}: say KIND,...=N with N a count of 1 or more")
        for k in names.split(","):
            if kinds is not None and k.strip() not in kinds:
                raise ValueError(f"{k.strip()!r}: the corpus has no such kind ({', '.join(sorted(kinds))})")
            out[k.strip()] = int(n)
    return out


# Input noise: kinds whose user turns are questions about a fact, never words the
# reply must copy (a definition question's word must stay exact).
NOISE_KINDS = ("guide", "guide_aug", "refusal")


def user_marker(tokenizer):
    """The ids of the user header from "<|" on, encoded as build_corpus renders
    a user turn ("\n<|user|>\n" + text)."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=tokenizer)
    ids = sp.encode("\n<|user|>\n")
    return ids[ids.index(sp.piece_to_id("<|")):]


def user_spans(ids, marker):
    """(start, end) of each user turn's text: after the marker tokens, up to </s>."""
    out, m = [], len(marker)
    for i in range(len(ids) - m):
        if ids[i:i + m] == marker:
            j = i + m
            while j < len(ids) and ids[j] != 2:
                j += 1
            out.append((i + m, j))
    return out


def noisy_spans(data, marker):
    """Dialogue index -> its user spans, for the kinds that take noise; found once."""
    return {i: user_spans(data["ids"][i].tolist(), marker)
            for i, k in enumerate(data["kinds"]) if k in NOISE_KINDS}


def add_input_noise(x, b, noise, rng):
    """Why: the models answered held-out guide questions by their frame ("Which
    command ... for this chat?") rather than the words that name the fact.
    Replacing a share of a question's tokens by random ones, a fresh draw each
    step, makes no single token decisive, so the model has to read them all."""
    p, spans, vocab = noise
    for r, i in enumerate(b):
        for s0, e in spans.get(i, ()):
            for t in range(s0, e):
                if rng.random() < p:
                    x[r, t] = rng.randrange(3, vocab)


def collate(data, b, noise=None, rng=None):
    T = max(len(data["ids"][i]) for i in b) - 1
    x = torch.zeros(len(b), T, dtype=torch.long)
    y = torch.zeros(len(b), T, dtype=torch.long)
    w = torch.zeros(len(b), T, dtype=torch.bool)
    for r, i in enumerate(b):
        ids = data["ids"][i].long()
        n = len(ids) - 1
        x[r, :n] = ids[:-1]
        y[r, :n] = ids[1:]
        w[r, :n] = data["mask"][i][1:]
    if noise:
        add_input_noise(x, b, noise, rng)
    return x, y, w


def cpu_has_bf16():
    """oneDNN's bf16 matmuls need AVX512_BF16; without it torch 1.13 falls back to
    scalar loops (a step took minutes on an AVX2-only EPYC), so f32 through BLAS wins."""
    try:
        with open("/proc/cpuinfo") as f:
            return any("avx512_bf16" in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


def resolve_precision(asked):
    return asked if asked != "auto" else ("bf16" if cpu_has_bf16() else "f32")


def loss_fn(model, x, y, w, bf16):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(x, select=w)
    n = int(w.sum())
    return F.cross_entropy(logits.float(), y[w]), n


def evaluate(model, val, batch_tokens, bf16):
    model.eval()
    lengths = [len(s) for s in val["ids"]]
    tot, n = 0.0, 0
    with torch.no_grad():
        for b in batches_for_epoch(lengths, 0, 0, batch_tokens * 2):
            x, y, w = collate(val, b)
            l, k = loss_fn(model, x, y, w, bf16)
            tot += float(l) * k
            n += k
    model.train()
    return tot / max(n, 1)


def lr_at(step, s):
    if step < s["warmup"]:
        return s["lr"] * (step + 1) / s["warmup"]
    p = (step - s["warmup"]) / max(1, s["total_steps"] - s["warmup"])
    floor = s.get("min_lr_ratio", 0.1)
    return s["lr"] * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def save_atomic(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def half_of_memory_gb():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**31


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(openelm.SIZES), default="small")
    ap.add_argument("--corpus", default=os.path.join(HERE, "out", "corpus"),
                    help="a corpus folder, or several separated by commas: one an epoch, in turn")
    ap.add_argument("--run", help="run folder (default: tools/demo-model/runs/SIZE)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=float)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--batch-tokens", type=int)
    ap.add_argument("--ckpt-minutes", type=float, default=5.0)
    ap.add_argument("--val-every", type=int, default=500)
    ap.add_argument("--max-steps", type=int, help="stop this process after N steps (benchmarks)")
    ap.add_argument("--max-rss-gb", type=float, default=half_of_memory_gb(),
                    help="past this resident size, checkpoint and start afresh from the checkpoint "
                    "(default: half the memory)")
    ap.add_argument("--init", help="a new run starts from these weights (HF folder): more epochs "
                    "on a finished run, with a fresh optimizer and schedule")
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--min-lr-ratio", type=float,
                    help="where the cosine ends, as a share of --lr (default 0.1)")
    ap.add_argument("--input-noise", type=float,
                    help="replace this share of the tokens of guide and refusal questions by random "
                    "ones, drawn afresh each step (default 0)")
    ap.add_argument("--repeat-kinds", metavar="KIND,...=N",
                    help="dialogues of these kinds (build_corpus's: greet, thanks, bye, identity, ...) "
                    "N times an epoch; groups separated by ';'")
    ap.add_argument("--total-steps", type=int,
                    help="the schedule's length instead of EPOCHS epochs; on a resumed run, shortens "
                    "or stretches the rest of its cosine")
    ap.add_argument("--precision", choices=("auto", "bf16", "f32"), default="auto",
                    help="bf16 autocast (f32 master weights) or plain f32; auto: bf16 when the CPU "
                    "has AVX512_BF16 (f32 then needs a fast BLAS: libopenblas0-pthread); a resumed "
                    "run keeps its own unless this says otherwise")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    run = a.run or os.path.join(HERE, "runs", a.size)
    os.makedirs(run, exist_ok=True)
    # Two processes on one run would overwrite each other's checkpoints.
    lock = open(os.path.join(run, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"{run}: another train.py is training this run")
    ckpt_path = os.path.join(run, "ckpt.pt")

    corpora = [os.path.abspath(c) for c in a.corpus.split(",")]
    trains = [torch.load(os.path.join(c, "train.pt")) for c in corpora]
    val = torch.load(os.path.join(corpora[0], "val.pt"))
    vocab = json.load(open(os.path.join(corpora[0], "stats.json")))["vocab_size"]

    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        s = ck["settings"]
        model = openelm.OpenELM(ck["config"])
        model.load_state_dict(ck["model"])
        if a.precision != "auto" or "precision" not in s:
            s["precision"] = resolve_precision(a.precision)
        print(f"resuming {ckpt_path} at step {ck['step']} (epoch {ck['epoch']}, batch {ck['batch']})", flush=True)
        if a.total_steps:
            if a.total_steps <= ck["step"]:
                sys.exit(f"{run}: --total-steps {a.total_steps} is not past the checkpoint's step {ck['step']}")
            s["total_steps"] = a.total_steps
        if s.get("corpora") != (corpora if len(corpora) > 1 else None):
            trained = ",".join(s.get("corpora", ["one corpus"]))
            sys.exit(f"{run}: this run trains on --corpus {trained}, not {a.corpus}")
    else:
        ck = None
        s = dict(DEFAULTS[a.size])
        for k in ("epochs", "lr", "batch_tokens", "warmup", "input_noise", "min_lr_ratio", "repeat_kinds"):
            if getattr(a, k) is not None:
                s[k] = getattr(a, k)
        s["seed"] = a.seed
        s["size"] = a.size
        s["precision"] = resolve_precision(a.precision)
        if len(corpora) > 1:
            s["corpora"] = corpora
        torch.manual_seed(s["seed"])
        if a.init:
            model = openelm.load_hf(a.init)
            s["init"] = os.path.abspath(a.init)
        else:
            model = openelm.OpenELM(openelm.hf_config(a.size, vocab))
    # The dialogues of an epoch: every one once, --repeat-kinds more often.
    try:
        items = [epoch_items(t["kinds"], parse_repeat(s.get("repeat_kinds"), set(t["kinds"]))) for t in trains]
    except ValueError as e:
        ap.error(f"--repeat-kinds {e}")
    lengths = [[len(x) for x in t["ids"]] for t in trains]

    def epoch_order(e):
        """The batches of epoch e, and the corpus they index."""
        k = e % len(trains)
        return batches_for_epoch(lengths[k], e, s["seed"], s["batch_tokens"], items[k]), k

    if not ck:
        s["batches_per_epoch"] = len(epoch_order(0)[0])
        s["total_steps"] = a.total_steps or int(s["batches_per_epoch"] * s["epochs"])
    json.dump(s, open(os.path.join(run, "settings.json"), "w"), indent=1)  # as this process runs it
    bf16 = s["precision"] == "bf16"
    noise = None
    if s.get("input_noise"):
        if len(trains) > 1:
            ap.error("--input-noise takes one corpus")
        marker = user_marker(os.path.join(corpora[0], "tokenizer.model"))
        noise = (s["input_noise"], noisy_spans(trains[0], marker), vocab)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=s["lr"], betas=(0.9, 0.95), eps=1e-8)
    step, epoch, bi = 0, 0, 0
    if ck:
        opt.load_state_dict(ck["optimizer"])
        step, epoch, bi = ck["step"], ck["epoch"], ck["batch"]
        torch.set_rng_state(ck["torch_rng"])
        random.setstate(ck["py_rng"])
    print(f"{a.size}: {'bf16 autocast' if bf16 else 'f32'}, {openelm.n_params(model):,} parameters, {s['total_steps']} steps "
          f"({s['batches_per_epoch']} batches/epoch), settings {s}", flush=True)

    log = open(os.path.join(run, "log.tsv"), "a")
    vlog = open(os.path.join(run, "val.tsv"), "a")
    if step == 0:
        log.write("step\tepoch\tlr\tloss\tloss_tokens\tbatch_tokens\twall_s\ttok_per_s\n")
        vlog.write("step\tepoch\tval_loss\twall_s\n")
        log.flush()
        vlog.flush()  # a run stopped before its first validation still has the header
    wall0 = ck["wall"] if ck else 0.0
    t_start = time.time()
    last_ckpt = time.time()
    model.train()
    order, ci = epoch_order(epoch)
    done_here = 0
    tok_window, t_window = 0, time.time()

    def checkpoint():
        save_atomic({"settings": s, "config": model.cfg, "model": model.state_dict(),
                     "optimizer": opt.state_dict(), "step": step, "epoch": epoch, "batch": bi,
                     "torch_rng": torch.get_rng_state(), "py_rng": random.getstate(),
                     "wall": wall0 + time.time() - t_start}, ckpt_path)

    while step < s["total_steps"]:
        if bi >= len(order):
            epoch += 1
            bi = 0
            order, ci = epoch_order(epoch)
        # The noise rng is seeded by step so a resumed run draws the same noise.
        rng = random.Random(s["seed"] * 7919 + step) if noise else None
        x, y, w = collate(trains[ci], order[bi], noise, rng)
        lr = lr_at(step, s)
        for g in opt.param_groups:
            g["lr"] = lr
        loss, k = loss_fn(model, x, y, w, bf16)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        bi += 1
        done_here += 1
        tok_window += x.numel()
        now = time.time()
        tps = tok_window / max(now - t_window, 1e-9)
        if now - t_window > 30:
            tok_window, t_window = 0, now
        wall = wall0 + now - t_start
        log.write(f"{step}\t{epoch}\t{lr:.3g}\t{float(loss):.4f}\t{k}\t{x.numel()}\t{wall:.1f}\t{tps:.0f}\n")
        log.flush()
        if step % 50 == 0:
            print(f"step {step}/{s['total_steps']} ep {epoch} loss {float(loss):.4f} lr {lr:.2e} "
                  f"{tps:.0f} tok/s wall {wall / 60:.1f} min", flush=True)
        if step % a.val_every == 0 or step == s["total_steps"]:
            vl = evaluate(model, val, s["batch_tokens"], bf16)
            vlog.write(f"{step}\t{epoch}\t{vl:.4f}\t{wall:.1f}\n")
            vlog.flush()
            print(f"step {step} val loss {vl:.4f}", flush=True)
        if time.time() - last_ckpt > a.ckpt_minutes * 60 or step == s["total_steps"]:
            checkpoint()
            last_ckpt = time.time()
        if a.max_steps and done_here >= a.max_steps:
            break
        # The process grows (about 9 MB a step with jemalloc that keeps its
        # pages, more with glibc's malloc) until it would fill the memory; a
        # fresh process resumes exactly from the checkpoint.
        if step < s["total_steps"] and done_here >= 10 and rss_bytes() > a.max_rss_gb * 2**30:
            checkpoint()
            log.close()
            vlog.close()
            print(f"step {step}: {rss_bytes() / 2**30:.1f} GB resident, past --max-rss-gb "
                  f"{a.max_rss_gb:.1f}: resuming in a fresh process", flush=True)
            os.execv(sys.executable, [sys.executable, os.path.abspath(sys.argv[0])] + sys.argv[1:])
    log.flush()
    if step >= s["total_steps"]:
        openelm.save_hf(model, os.path.join(run, "final"), torch.float32,
                        tokenizer=os.path.join(corpora[0], "tokenizer.model"))
        print(f"done: {os.path.join(run, 'final')}", flush=True)


if __name__ == "__main__":
    main()
