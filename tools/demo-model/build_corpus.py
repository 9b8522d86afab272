#!/usr/bin/python3
"""Build the demo models' corpus, tokenizer and token ids (deterministic).

    /usr/bin/python3 tools/demo-model/build_corpus.py [--out DIR] [--seed N] [--split-seed N] [--tokenizer FILE | --train-tokenizer]

Writes into DIR (default tools/demo-model/out/corpus):
  lexicon.tsv           the lexicon (word, pos, gloss, example, synonyms, antonym, 2nd meaning,
                        SUBTLEX-US count)
  everyday.tsv          SUBTLEX-US's 1,000 most frequent content words and the entry defining each
  eval_long.jsonl       eval's held-out long conversations (20 turns each)
  train.jsonl val.jsonl dialogues: {"kind": ..., "messages": [[role, text], ...]}
  spm_input.txt         with --train-tokenizer: the text the tokenizer is trained on
  tokenizer.model       a copy of tools/demo-model/tokenizer.model, the shipped models' vocabulary
                        (SentencePiece BPE, byte fallback, unk 0, bos 1, eos 2; trained on corpus 2),
                        or with --train-tokenizer one trained on this corpus
  train.pt val.pt       token ids and loss masks as elmchat's openelm-instruct renders them
  stats.json            sizes in dialogues and tokens
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guide_augment  # noqa: E402
import guide_data  # noqa: E402
import subtlex  # noqa: E402

WN = "/usr/share/wordnet"
POS_FILES = [("noun", "n", 1), ("verb", "v", 2), ("adj", "a", 3), ("adv", "r", 4)]
POS_NAME = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
N_LEXICON = 3000
GUIDE_PER_FACT = 240  # corpus 4 (corpus 3: 160), plus situation questions
GUIDE_AUG_PER_FACT = 200  # corpus 5: guide_augment.py
POINTER = guide_data.POINTER

IDENTITY = ("I am a tiny model trained by the elmchat project on WordNet and elmchat's manual. "
            + POINTER)
CAPABILITIES = ("I can define about 3,000 common English words, with examples, synonyms, other "
                "meanings and antonyms, and explain how to use elmchat. " + POINTER)
GREETING = ("Hello! I am elmchat's tiny demo model. Ask me what a common English word means, "
            "or how to use elmchat.")
THANKS = "You're welcome!"
GOODBYE = "Goodbye! Type /quit to leave elmchat."
REFUSAL = ("Sorry, I can't help with that: I only know WordNet definitions and elmchat's manual. "
           + POINTER)


FIXED_PHRASE_KINDS = ("greet", "thanks", "bye", "identity")


def unknown_word(w):
    return (f"I don't know the word {w}: it is not among the 3,000 common English words I "
            f"learned. " + POINTER)


# ------------------------------------------------------------------ WordNet

def load_blocklist():
    words = set()
    with open(os.path.join(HERE, "blocklist.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                words.add(line.lower())
    return words


def has_blocked(text, block):
    return any(t in block for t in re.findall(r"[a-z]+", text.lower()))


def read_data(pos_file):
    """offset -> (ss_type, [lemmas], [(ptr, target_offset, target_pos, src, dst)], gloss, examples)"""
    out = {}
    with open(os.path.join(WN, "data." + pos_file), encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue
            head, _, gloss = line.partition(" | ")
            t = head.split()
            off, ss_type = t[0], t[2]
            n_w = int(t[3], 16)
            lemmas = []
            i = 4
            for _ in range(n_w):
                lem = re.sub(r"\([a-z]+\)$", "", t[i])  # adjective markers (a) (p) (ip)
                lemmas.append(lem)
                i += 2
            n_p = int(t[i]); i += 1
            ptrs = []
            for _ in range(n_p):
                sym, toff, tpos, st = t[i], t[i + 1], t[i + 2], t[i + 3]
                ptrs.append((sym, toff, tpos, int(st[:2], 16), int(st[2:], 16)))
                i += 4
            gloss = gloss.strip()
            parts = [p.strip() for p in gloss.split(";")]
            defs, exs = [], []
            for p in parts:
                if p.startswith('"'):
                    e = p.strip().strip('"').strip()
                    if e:
                        exs.append(e)
                elif p and not exs:
                    defs.append(p)
            out[off] = (ss_type, lemmas, ptrs, "; ".join(defs), exs)
    return out


def index_entries(pf):
    """index.PF's lemmas: (lemma, tagsense_cnt, synset offsets by sense number)."""
    with open(os.path.join(WN, "index." + pf), encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue  # the licence header
            t = line.split()
            n_syn, n_ptr = int(t[2]), int(t[3])
            yield t[0], int(t[5 + n_ptr]), t[6 + n_ptr: 6 + n_ptr + n_syn]


# WordNet's morphology (morphy): the suffix rules by part of speech; the
# exception lists (went -> go) are read from WN/*.exc.
MORPH_RULES = {"n": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                     ("men", "man"), ("ies", "y")],
               "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
                     ("ing", "e"), ("ing", "")],
               "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")], "r": []}


def read_exceptions():
    """form -> [(pos, lemma)] from noun.exc, verb.exc, adj.exc, adv.exc."""
    exc = {}
    for pf, p, _ in POS_FILES:
        with open(os.path.join(WN, pf + ".exc"), encoding="latin-1") as f:
            for line in f:
                form, *lemmas = line.split()
                exc.setdefault(form, []).extend((p, l) for l in lemmas)
    return exc


def lemmas_of(form, lemma_pos, exc, tags):
    """The WordNet lemmas a word form stands for: its exception-list lemmas
    (saw -> see), and itself when it is one, else the first lemma the suffix
    rules give (dogs -> dog, going -> go, does -> do, not doe).  A form that
    is a lemma of its own but a rarer one (SemCor tags) than the lemma a rule
    gives stands for that lemma (years -> year, going -> go)."""
    out = [l for p, l in exc.get(form, []) if (l, p) in lemma_pos]
    base = next((form[:-len(suf)] + rep for p in "vnar" for suf, rep in MORPH_RULES[p]
                 if form.endswith(suf) and len(form) > len(suf)
                 and (form[:-len(suf)] + rep, p) in lemma_pos), None)
    if any((form, p) in lemma_pos for p in "nvar") and not (base and tags.get(base, 0) > tags.get(form, 0)):
        base = form
    if base and base not in out:
        out.insert(0, base)
    return out


def everyday_forms(lemma_pos, exc, tags, content, opener):
    """SUBTLEX-US's forms, most frequent first, as (form, count, lemmas): the
    content words (subtlex.py: not a function word or a contraction's piece,
    and the form of a lemma with a common-noun, verb, adjective or adverb
    sense: content(lemma)).  Of the capitalized ones, those that opener()
    takes for a sentence's first word rather than a name."""
    out = []
    for form, c in subtlex.words(opener):
        if form in subtlex.FRAGMENTS or form in subtlex.FUNCTION_WORDS:
            continue
        ls = [l for l in lemmas_of(form, lemma_pos, exc, tags) if content(l)]
        if ls:
            out.append((form, c, ls))
    return out


def build_lexicon():
    """The N_LEXICON single-word lemmas people use most: WordNet lemmas ranked
    by SUBTLEX-US, the counts of a lemma's forms summed (went and going count
    for go); function words, proper nouns (no lowercase sense: "oh" is only
    Ohio) and the blocklist left out.  The definition is the sense with the
    highest SemCor tag count (cntlist.rev) among the lowercase ones."""
    block = load_blocklist()
    data = {p: read_data(pf) for pf, p, _ in POS_FILES}
    # tag counts per sense: cntlist.rev "lemma%ss_type:... sense_number tag_cnt"
    cnt = {}
    with open(os.path.join(WN, "cntlist.rev"), encoding="latin-1") as f:
        for line in f:
            key, num, c = line.split()
            lemma, _, rest = key.partition("%")
            ss = int(rest.split(":")[0])
            p = {1: "n", 2: "v", 3: "a", 4: "r", 5: "a"}[ss]
            cnt[(lemma, p, int(num))] = int(c)
    senses = {}  # lemma -> [(tag_cnt, pos_rank, sense_no, pos, offset)], lowercase senses only
    lemma_pos = set()
    tags = {}  # lemma -> SemCor tag count, all senses; and of its senses other than nouns
    tags_not_noun = {}
    for (lemma, p, _), c in cnt.items():
        tags[lemma] = tags.get(lemma, 0) + c
        if p != "n":
            tags_not_noun[lemma] = tags_not_noun.get(lemma, 0) + c
    for pf, p, rank in POS_FILES:
        for lemma, tagsense, offs in index_entries(pf):
            lemma_pos.add((lemma, p))
            if not re.fullmatch(r"[a-z]+", lemma):
                continue
            for k, off in enumerate(offs):
                if lemma in data[p][off][1]:  # "Ohio" is a sense of index's "oh"; not of the word oh
                    senses.setdefault(lemma, []).append(
                        (cnt.get((lemma, p, k + 1), 0), rank, k + 1, p, off))

    def content(w):
        return w in senses and w not in subtlex.FUNCTION_WORDS

    def opener(w):
        # a capitalized entry that mostly opens a sentence (Okay, Listen,
        # Maybe, However) rather than a name: an adverb, or a verb or
        # adjective tagged 7 times or more in SemCor (not Harry, Frank, Bill)
        return content(w) and ((w, "r") in lemma_pos or tags_not_noun.get(w, 0) >= 7)

    exc = read_exceptions()
    forms = everyday_forms(lemma_pos, exc, tags, content, opener)
    total = {}
    for form, c, ls in forms:
        for l in ls:
            total[l] = total.get(l, 0) + c
    ranked = sorted(total, key=lambda w: (-total[w], w))
    lex, removed, unknown = [], [], []
    for w in ranked:
        if len(lex) >= N_LEXICON:
            if w not in block and len(unknown) < 2000 and len(w) > 2:
                unknown.append(w)
            continue
        if w in block:
            removed.append(w)
            continue
        ss = sorted(senses[w], key=lambda s: (-s[0], s[1], s[2]))
        entries = []
        for c, _, _, p, off in ss:
            ss_type, lemmas, ptrs, gloss, exs = data[p][off]
            exs = [e for e in exs if not has_blocked(e, block)]
            entries.append((p, off, ss_type, lemmas, ptrs, gloss, exs))
        best = entries[0]
        if has_blocked(best[5], block) or not best[5]:
            removed.append(w)
            continue
        p, off, ss_type, lemmas, ptrs, gloss, exs = best
        # example: prefer one that contains the word
        ex = next((e for e in exs if re.search(r"\b" + w, e.lower())), exs[0] if exs else "")
        syn = []
        for l in lemmas:
            l2 = l.replace("_", " ")
            if l2.lower() != w and l2 not in syn and not has_blocked(l2, block):
                syn.append(l2)
        syn = syn[:6]
        # antonym: '!' pointers from this word (or the whole synset), senses in rank order
        ant = ""
        for e in entries:
            idx = [i + 1 for i, l in enumerate(e[3]) if l.lower() == w]
            for sym, toff, tpos, src, dst in e[4]:
                if sym == "!" and (src == 0 or src in idx):
                    t_lemmas = data["a" if tpos == "s" else tpos][toff][1]
                    cand = t_lemmas[dst - 1] if dst else t_lemmas[0]
                    cand = cand.replace("_", " ")
                    if not has_blocked(cand, block):
                        ant = cand
                        break
            if ant:
                break
        second = next(((e[0], e[5]) for e in entries[1:]
                       if e[5] and e[5] != gloss and not has_blocked(e[5], block)), None)
        # the follow-up example: the best sense's, else another sense's that uses the word
        fu_ex = ex
        if not fu_ex:
            for e in entries[1:]:
                fu_ex = next((x for x in e[6] if re.search(r"\b" + w, x.lower())), "")
                if fu_ex:
                    break
        lex.append(dict(word=w, pos=POS_NAME[ss_type], gloss=gloss, example=ex, synonyms=syn,
                        antonym=ant, second=(POS_NAME[second[0]], second[1]) if second else None,
                        fu_example=fu_ex, tagcount=total[w]))
    return lex, removed, unknown, forms


N_FORMS = 6000  # inflected forms taught: those among the list's first N_FORMS content forms


def taught_forms(lex, forms):
    """(form, entry): an inflected form among the N_FORMS most frequent
    content forms that has no entry of its own but whose lemma has one
    (went -> go): asked for it, the model says so and defines the lemma."""
    by_word = {e["word"]: e for e in lex}
    out = []
    for form, c, ls in forms[:N_FORMS]:
        if form in by_word:
            continue
        cands = [by_word[l] for l in ls if l in by_word]
        if cands:
            out.append((form, max(cands, key=lambda e: (e["tagcount"], e["word"]))))
    return out


def everyday_coverage(lex, forms, removed):
    """What the issue measures: of the list's 1,000 most frequent content
    words (forms, as people type them), the share with an entry of their
    own, and the share answered with a definition (their own, or their
    lemma's through taught_forms); and which of the 200 most frequent
    content lemmas have no entry (only blocked words may be missing)."""
    words = {e["word"] for e in lex}
    taught = {f for f, _ in taught_forms(lex, forms)}
    top = forms[:1000]
    total = {}
    for _, c, ls in forms:
        for l in ls:
            total[l] = total.get(l, 0) + c
    top_lemmas = sorted(total, key=lambda w: (-total[w], w))[:200]
    return {"top1000_forms_own_entry": sum(f in words for f, _, _ in top) / len(top),
            "top1000_forms_defined": sum(f in words or f in taught for f, _, _ in top) / len(top),
            "top200_lemmas_missing": [w for w in top_lemmas if w not in words],
            "top200_lemmas_missing_not_blocked": [w for w in top_lemmas if w not in words and w not in removed],
            "taught_forms": len(taught)}


def write_everyday(path, lex, forms, n=1000):
    """everyday.tsv: SUBTLEX-US's n most frequent content words (forms) with
    rank, count and the entry that defines them (the form's own, its lemma's
    through taught_forms, or none): eval's everyday set picks from it by rank."""
    words = {e["word"] for e in lex}
    taught = dict((f, e["word"]) for f, e in taught_forms(lex, forms))
    with open(path, "w") as f:
        for rank, (form, c, _) in enumerate(forms[:n], 1):
            f.write(f"{rank}\t{form}\t{c}\t{form if form in words else taught.get(form, '')}\n")


def form_reply(form, e):
    return f"{form} is a form of {e['word']}. " + definition(e)


def topic_words():
    ws = set()
    for key, _, topics in guide_data.FACTS:
        for t in topics + guide_data.MORE_TOPICS.get(key, []):
            ws |= set(re.findall(r"[a-z]+", t.lower()))
    return ws


def topic_synonyms():
    """word of a guide topic -> common single-word WordNet synonyms: the
    lemmas of its first two verb senses and its first noun and adjective
    sense, kept when their summed tag count is at least 3 (no rare words)."""
    block = load_blocklist()
    want = topic_words() - guide_augment.KEEP
    total, offsets = {}, {}
    for pf, p, _ in POS_FILES:
        for lemma, tagsense, offs in index_entries(pf):
            total[lemma] = total.get(lemma, 0) + tagsense
            if lemma in want and p in "vna":
                offsets[(lemma, p)] = offs
    data = {p: read_data(pf) for pf, p, _ in POS_FILES if p in "vna"}
    syn = {}
    for (w, p), offs in sorted(offsets.items()):
        for off in offs[:2 if p == "v" else 1]:
            for lem in data[p][off][1]:
                lem = lem.lower()
                if (re.fullmatch(r"[a-z]+", lem) and lem != w and total.get(lem, 0) >= 3
                        and lem not in block and lem not in guide_augment.KEEP):
                    syn.setdefault(w, [])
                    if lem not in syn[w]:
                        syn[w].append(lem)
    return syn


def definition(e):
    s = f"{e['word']} ({e['pos']}): {e['gloss']}."
    if e["example"]:
        s += f' Example: "{e["example"]}"'
    return s


def synonyms_reply(e):
    if e["synonyms"]:
        return f"Synonyms of {e['word']}: {', '.join(e['synonyms'])}."
    return f"WordNet lists no synonyms for {e['word']} in this sense."


def antonym_reply(e):
    if e["antonym"]:
        return f"The antonym of {e['word']} is {e['antonym']}."
    return f"WordNet lists no antonym for {e['word']}."


def second_reply(e):
    if e["second"]:
        return f"Another meaning of {e['word']} ({e['second'][0]}): {e['second'][1]}."
    return f"WordNet lists only one meaning for {e['word']}."


def example_reply(e):
    if e["fu_example"]:
        return f'Example: "{e["fu_example"]}"'
    return f"WordNet gives no example for {e['word']}."


def pos_reply(e):
    art = "an" if e["pos"][0] in "aeiou" else "a"
    return f"{e['word']} is {art} {e['pos']}."


# ------------------------------------------------------------------ phrasings

DEF_FRAMES = [
    "What does {w} mean?", "what does {w} mean", "What does {w} mean", "Define {w}.", "define {w}",
    "Define {w}", "Meaning of {w}?", "meaning of {w}", "{w}?", "{W}?", "{w}", "What is the meaning of {w}?",
    "What's the meaning of {w}?", "What's the definition of {w}?", "definition of {w}",
    "What is {w}?", "what is {w}", "What does the word {w} mean?", "Explain the word {w}.",
    "Can you define {w}?", "What's {w}?", "Tell me what {w} means.", "What is the definition of {w}?",
    "I don't know the word {w}. What does it mean?", "Look up {w}.", "{w} meaning",
    "Give me the definition of {w}.", "What is meant by {w}?", "Please define {w}.",
    "define the word {w}", "{W}: what does it mean?", "What does \"{w}\" mean?",
]
NOUN_DEF_FRAMES = ["What is a {w}?", "what is a {w}", "What's a {w}?"]
SYN_FU = ["Synonyms?", "What are its synonyms?", "Any synonyms?", "Give me a synonym.",
          "What's another word for it?", "Other words for {w}?", "Synonyms of {w}?",
          "What are some synonyms for {w}?", "synonyms", "And synonyms?"]
SYN_ALONE = ["What are the synonyms of {w}?", "Synonyms for {w}", "Another word for {w}?",
             "synonyms of {w}", "Give me a synonym for {w}.", "What is a synonym for {w}?",
             "What's another word for {w}?"]
MEAN_FU = ["Another meaning?", "Does it have another meaning?", "What else can it mean?",
           "Other meanings?", "Any other sense?", "What's another meaning of {w}?",
           "Give me a second meaning.", "And another meaning?"]
MEAN_ALONE = ["What is another meaning of {w}?", "Another meaning of {w}?",
              "What else can {w} mean?", "Second meaning of {w}", "Does {w} have another meaning?"]
EX_FU = ["Example?", "Give me an example.", "Use it in a sentence.", "Can you use {w} in a sentence?",
         "An example, please.", "Show me an example sentence.", "example"]
EX_ALONE = ["Use {w} in a sentence.", "Give me an example with {w}.", "Example of {w}?",
            "An example sentence for {w}, please.", "How is {w} used in a sentence?"]
ANT_FU = ["Antonym?", "What is the opposite?", "What's its opposite?", "Opposite?",
          "Is there an antonym?", "What is the antonym of {w}?", "Opposite of {w}?",
          "What's the opposite of {w}?", "antonym", "And the opposite?"]
ANT_ALONE = ["What is the opposite of {w}?", "Antonym of {w}?", "opposite of {w}",
             "What's the antonym of {w}?", "Give me the opposite of {w}.", "What is the antonym of {w}?"]
POS_ALONE = ["What part of speech is {w}?", "Is {w} a noun or a verb?", "part of speech of {w}"]
DRILLS = ["Repeat the word {w}.", "Say {w}.", "Repeat: {w}", "Spell {w}.", "Echo {w}",
          "Say the word {w}.", "Type {w}.", "Write the word {w}.",
          # capitalized: the reply is the lowercase lemma, spelled by other pieces
          "Say {W}.", "Repeat: {W}", "The word {W}, in lowercase?", "{W}, lowercase?"]

IDENTITY_Q = ["Who are you?", "who are you", "What are you?", "What are you", "Who am I talking to?",
              "Introduce yourself.", "Tell me about yourself.", "What model is this?", "Which model are you?",
              "Are you ChatGPT?", "Are you OpenELM?", "Are you a real OpenELM model?", "Who made you?",
              "Who trained you?", "What were you trained on?", "Are you an AI?", "What is your name?",
              "Are you human?", "Are you a large language model?", "Why are your answers so limited?",
              "Are you the real model?", "identify yourself", "What kind of model are you?"]
CAPS_Q = ["What can you do?", "What do you know?", "How can you help me?", "What can I ask you?",
          "What are you good at?", "what can you do", "What do you do?", "What questions can you answer?"]
GREET_Q = ["Hello", "Hello!", "Hi", "Hi!", "hi", "hello", "Hey", "Hey there!", "Good morning!",
           "Good evening.", "Good afternoon", "Hi there", "Greetings!", "Howdy", "Yo", "Hello there.",
           "hey", "Hi, how are you?", "How are you?", "How's it going?", "Nice to meet you."]
THANKS_Q = ["Thanks!", "Thank you.", "thanks", "Thank you very much!", "Thanks a lot.", "Cheers!",
            "Great, thanks.", "thank you", "Thanks for the help.", "Perfect, thank you!", "ty", "Thx"]
BYE_Q = ["Bye", "Goodbye!", "bye", "See you later.", "Good night!", "I'm done, bye.", "Farewell.",
         "See you!", "That's all, goodbye.", "Bye bye", "Later!", "Cya"]


def refusal_questions(rng, n):
    countries = ["France", "Japan", "Brazil", "Canada", "Kenya", "Peru", "Norway", "India", "Egypt",
                 "Spain", "Mexico", "Chile", "Italy", "Germany", "Poland", "Vietnam"]
    books = ["Hamlet", "War and Peace", "Don Quixote", "Moby Dick", "Pride and Prejudice", "Ulysses"]
    tasks = ["reverse a string", "sort a list", "read a file", "parse JSON", "compute a factorial",
             "find prime numbers", "merge two arrays", "connect to a database", "download a web page"]
    langs = ["Python", "C", "JavaScript", "Rust", "Go", "Java", "C++", "Haskell", "bash"]
    topics = ["cats", "the ocean", "autumn", "love", "the moon", "friendship", "winter", "a robot"]
    things = ["tea", "coffee", "Linux", "Windows", "dogs", "cats", "summer", "football", "jazz"]
    foods = ["pancakes", "lasagna", "bread", "curry", "soup", "cookies"]
    gens = [
        lambda: f"What is {rng.randint(2, 99)} plus {rng.randint(2, 99)}?",
        lambda: f"What is {rng.randint(2, 99)} times {rng.randint(2, 99)}?",
        lambda: f"{rng.randint(2, 999)}+{rng.randint(2, 999)}=?",
        lambda: f"What's {rng.randint(2, 99)}*{rng.randint(2, 99)}?",
        lambda: f"Calculate {rng.randint(10, 999)} - {rng.randint(2, 99)}.",
        lambda: f"What is the square root of {rng.randint(2, 400)}?",
        lambda: f"Is {rng.randint(2, 999)} a prime number?",
        lambda: f"Solve {rng.randint(2, 9)}x + {rng.randint(1, 20)} = {rng.randint(21, 99)}.",
        lambda: f"Write a {rng.choice(langs)} function to {rng.choice(tasks)}.",
        lambda: f"How do I {rng.choice(tasks)} in {rng.choice(langs)}?",
        lambda: f"Write a {rng.choice(langs)} program that prints hello world.",
        lambda: f"Fix my {rng.choice(langs)} code.",
        lambda: f"Why does my {rng.choice(langs)} program crash?",
        lambda: f"What is the capital of {rng.choice(countries)}?",
        lambda: f"Who is the president of {rng.choice(countries)}?",
        lambda: f"What is the population of {rng.choice(countries)}?",
        lambda: f"Who wrote {rng.choice(books)}?",
        lambda: f"Write a poem about {rng.choice(topics)}.",
        lambda: f"Write a story about {rng.choice(topics)}.",
        lambda: f"Write an essay on {rng.choice(topics)}.",
        lambda: f"What do you think about {rng.choice(things)}?",
        lambda: f"Which is better, {rng.choice(things)} or {rng.choice(things)}?",
        lambda: f"Do you like {rng.choice(things)}?",
        lambda: f"Give me a recipe for {rng.choice(foods)}.",
        lambda: f"How do I cook {rng.choice(foods)}?",
        lambda: f"Translate \"good morning\" into {rng.choice(['French', 'German', 'Spanish', 'Japanese'])}.",
        lambda: f"How do you say thank you in {rng.choice(['French', 'German', 'Spanish', 'Italian'])}?",
        lambda: f"What happened in {rng.randint(1800, 2024)}?",
        lambda: f"When was {rng.choice(countries)} founded?",
        lambda: rng.choice([
            "What's the latest news?", "Who won the election?", "What happened today?",
            "What's the weather like tomorrow?", "What is the stock price of Apple?", "Tell me a joke.",
            "Summarize this article for me.", "Recommend a movie.", "What is the meaning of life?",
            "How far away is the Moon?", "How tall is Mount Everest?", "Who invented the telephone?",
            "When did World War II end?", "What time is it?", "What is today's date?",
            "Explain quantum physics.", "How does the stock market work?", "Should I buy bitcoin?",
            "What is your opinion on politics?", "Who is the best football player?",
            "Can you help me with my homework?", "Write my cover letter.", "What is the speed of light?",
            "How many people live on Earth?", "What is the tallest building in the world?",
            "Explain how a car engine works.", "What should I eat tonight?", "Tell me a fun fact.",
            "Who will win the next World Cup?", "How do I lose weight?", "What is the best programming language?",
            "Write a SQL query to count rows.", "Explain recursion.", "What is 2+2?", "Play a game with me.",
            "Can you browse the internet?", "Give me some life advice.", "Is it going to rain?",
            "What is the GDP of China?", "How old is the universe?", "Write a haiku.",
        ]),
    ]
    out = []
    for _ in range(n):
        out.append(rng.choice(gens)())
    return out


def norm_q(q):
    return re.sub(r"[^a-z0-9/]+", " ", q.lower()).strip()


def cap(s):
    return s[:1].upper() + s[1:]


# Words a phrase may share with the held-out questions: function words and
# the names of what every guide question is about.
SHARED_OK = set("""a an the i my me to of in on for with and or but is are be it its this that
what which how do does can could would should will there any way some one up out from by at as
command commands key keys chat chats conversation conversations model models message messages
elmchat session sessions reply replies answer type press use""".split())


def stem(w):
    for suf in ("ing", "es", "ed", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[:-len(suf)]
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


def words(text):
    return [stem(w) for w in re.findall(r"[a-z0-9]+", text.lower())]


SHARED_STEMS = {stem(w) for w in SHARED_OK}


def trigrams(text):
    """Word 3-grams (stemmed) that hold at least one content word."""
    w = words(text)
    return {tuple(w[i:i + 3]) for i in range(len(w) - 2) if set(w[i:i + 3]) - SHARED_STEMS}


# The held-out guide questions: the 40, and 40 more written before
# corpus 4 (the first set's misses had shaped corpus 3's topics).
HELD_OUT_FILES = ("eval_guide.tsv", "eval_guide_fresh.tsv")


def held_out_questions():
    for name in HELD_OUT_FILES:
        with open(os.path.join(HERE, name)) as f:
            for line in f:
                if not line.startswith("#") and line.strip():
                    yield line.split("\t")[0]


def held_out_trigrams():
    grams = set()
    for q in held_out_questions():
        grams |= trigrams(q)
    return grams


def guide_questions(rng, key, topics, per_fact, held_out):
    """per_fact distinct questions for a fact: its topics and MORE_TOPICS
    crossed with every frame, a context prefix on some.  A question that
    shares a content-word 3-gram with a held-out one is dropped (corpus 3;
    corpus 2 dropped every phrase sharing a single content word, which left
    the held-out questions' ordinary words, "keystroke", "launching", unseen)."""
    verb = guide_data.VERB_FRAMES + guide_data.VERB_FRAMES_MORE
    noun = guide_data.NOUN_FRAMES + guide_data.NOUN_FRAMES_MORE
    qs = []
    for t in topics + guide_data.MORE_TOPICS.get(key, []):
        if t.startswith("N:"):
            qs += [fr.replace("{t}", t[2:]).replace("{T}", cap(t[2:])) for fr in noun]
            continue
        qs += [fr.replace("{t}", t).replace("{T}", cap(t)) for fr in verb]
        t3 = guide_data.third_person(t)
        qs += [fr.replace("{t3}", t3) for fr in guide_data.THIRD_FRAMES]
    qs = sorted(set(qs))
    rng.shuffle(qs)
    out = []
    for q in qs:
        if len(out) == per_fact:
            break
        p = rng.choice(guide_data.PREFIXES)
        if p.endswith((". ", "! ", ": ")):
            q = q[:1].upper() + q[1:]
        elif p and not q.startswith(("I ", "I'")):
            q = q[:1].lower() + q[1:]
        if not trigrams(p + q) & held_out:
            out.append(p + q)
    return out + situation_questions(rng, key, per_fact // 6, held_out)


def situation_questions(rng, key, n, held_out):
    """Up to n questions that state a situation, then ask briefly (corpus 4)."""
    qs = sorted({s + " " + q for s in guide_data.SITUATIONS.get(key, [])
                 for q in guide_data.SITUATION_QUESTIONS})
    rng.shuffle(qs)
    return [q for q in qs if not trigrams(q) & held_out][:n]


# ------------------------------------------------------------------ dialogues

N_MIXED = 3000  # short mixed conversations (corpus 8: 6,000; corpus 9 adds the long ones)
N_LONG = 1200


def make_dialogues(lex, unknown, forms, seed, length):
    rng = random.Random(seed)
    D = []  # (kind, [(user, assistant), ...])

    def def_q(e):
        frames = DEF_FRAMES + (NOUN_DEF_FRAMES if e["pos"] == "noun" else [])
        return rng.choice(frames)

    def fill(fr, w):
        return fr.replace("{w}", w).replace("{W}", cap(w))

    followups = [
        (SYN_FU, synonyms_reply), (MEAN_FU, second_reply), (EX_FU, example_reply), (ANT_FU, antonym_reply)]
    for e in lex:
        w = e["word"]
        frames = DEF_FRAMES + (NOUN_DEF_FRAMES if e["pos"] == "noun" else [])
        for fr in rng.sample(frames, 7):
            D.append(("def", [(fill(fr, w), definition(e))]))
        for _ in range(2):
            turns = [(fill(def_q(e), w), definition(e))]
            for fus, fn in rng.sample(followups, rng.randint(1, 3)):
                turns.append((fill(rng.choice(fus), w), fn(e)))
            D.append(("def_multi", turns))
        D.append(("syn", [(fill(rng.choice(SYN_ALONE), w), synonyms_reply(e))]))
        D.append(("ant", [(fill(rng.choice(ANT_ALONE), w), antonym_reply(e))]))
        D.append(("mean", [(fill(rng.choice(MEAN_ALONE), w), second_reply(e))]))
        D.append(("ex", [(fill(rng.choice(EX_ALONE), w), example_reply(e))]))
        for fr in rng.sample(DRILLS, 2):
            D.append(("drill", [(fill(fr, w), w)]))
        if rng.random() < 0.3:
            D.append(("pos", [(fill(rng.choice(POS_ALONE), w), pos_reply(e))]))
    for w in unknown:
        D.append(("unknown", [(fill(rng.choice(DEF_FRAMES), w), unknown_word(w))]))
    for f, e in forms:
        for fr in rng.sample(DEF_FRAMES, 2):
            D.append(("form", [(fill(fr, f), form_reply(f, e))]))

    eval_q = {norm_q(q) for q in held_out_questions()}
    guide_pairs = []
    held_out = held_out_trigrams()
    for key, ans, topics in guide_data.FACTS:
        for q in guide_questions(rng, key, topics, GUIDE_PER_FACT, held_out):
            guide_pairs.append((q, ans))
            D.append(("guide", [(q, ans)]))
    words = topic_words()
    examples = [e["example"] for e in lex
                if e["example"] and not set(re.findall(r"[a-z]+", e["example"].lower())) & words]
    aug = guide_augment.Augmenter(rng, topic_synonyms(), examples)
    asked = {}  # question -> the answers it was generated for: ambiguous ones are dropped
    for q, a in guide_pairs:
        asked.setdefault(norm_q(q), set()).add(a)
    aug_pairs = []
    for key, ans, topics in guide_data.FACTS:
        for q in aug.questions(topics + guide_data.MORE_TOPICS.get(key, []),
                               guide_data.VERB_FRAMES + guide_data.VERB_FRAMES_MORE,
                               guide_data.NOUN_FRAMES + guide_data.NOUN_FRAMES_MORE, GUIDE_AUG_PER_FACT):
            if not trigrams(q) & held_out:
                aug_pairs.append((q, ans))
                asked.setdefault(norm_q(q), set()).add(ans)
    for q, ans in aug_pairs:
        if len(asked[norm_q(q)]) == 1:
            guide_pairs.append((q, ans))
            D.append(("guide_aug", [(q, ans)]))
    for q, a in guide_pairs:
        if norm_q(q) in eval_q:
            raise SystemExit(f"held-out eval question generated: {q}")

    small = []
    for q in IDENTITY_Q:
        small += [("identity", q, IDENTITY)] * 6
    for q in CAPS_Q:
        small += [("identity", q, CAPABILITIES)] * 6
    for q in GREET_Q:
        small += [("greet", q, GREETING)] * 5
    for q in THANKS_Q:
        small += [("thanks", q, THANKS)] * 4
    for q in BYE_Q:
        small += [("bye", q, GOODBYE)] * 4
    for q in refusal_questions(rng, 2500):
        small += [("refusal", q, REFUSAL)]
    for k, q, a in small:
        D.append((k, [(q, a)]))

    # mixed conversations: greetings, words, guide questions, thanks, goodbye
    for _ in range(N_MIXED):
        turns = []
        if rng.random() < 0.4:
            turns.append((rng.choice(GREET_Q), GREETING))
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if r < 0.55:
                e = rng.choice(lex)
                turns.append((fill(def_q(e), e["word"]), definition(e)))
                if rng.random() < 0.4:
                    fus, fn = rng.choice(followups)
                    turns.append((fill(rng.choice(fus), e["word"]), fn(e)))
            elif r < 0.85:
                turns.append(rng.choice(guide_pairs))
            elif r < 0.95:
                turns.append((rng.choice(refusal_questions(rng, 1)), REFUSAL))
            else:
                turns.append((rng.choice(IDENTITY_Q), IDENTITY))
        if rng.random() < 0.3:
            turns.append((rng.choice(THANKS_Q), THANKS))
        if rng.random() < 0.2:
            turns.append((rng.choice(BYE_Q), GOODBYE))
        D.append(("mixed", turns))
    # long ones that fill the context, as the chat keeps it (corpus 9)
    for turns in long_conversations(rng, lex, forms, guide_pairs, N_LONG, length):
        D.append(("long", turns))
    rng.shuffle(D)
    # the eval's long-conversation set: EVAL_LONG conversations of 20 turns
    # from their own seed (held out: no training dialogue is one of them),
    # not cut: the chat (and eval) drops old exchanges as the context fills
    held = long_conversations(random.Random(EVAL_LONG_SEED), lex, forms, guide_pairs, EVAL_LONG, length,
                              turns_wanted=(20, 20), cut=False)
    held = [t[:20] for t in held]
    seen = {tuple(t) for _, t in D}
    assert not any(tuple(t) in seen for t in held)
    return D, held


CTX = 1024  # the demo models' context
REPLY_RESERVE = CTX // 4  # the chat keeps this much free for the reply (src/conversation/conversation.c)


def sample_turns(rng, lex, forms, guide_pairs):
    """A few turns of a conversation: a word and perhaps follow-ups about it,
    an inflected form, a guide question, a refusal, identity, thanks."""
    r = rng.random()
    if r < 0.45:
        e = rng.choice(lex)
        frames = DEF_FRAMES + (NOUN_DEF_FRAMES if e["pos"] == "noun" else [])
        turns = [(rng.choice(frames).replace("{w}", e["word"]).replace("{W}", cap(e["word"])), definition(e))]
        fus = [(SYN_FU, synonyms_reply), (MEAN_FU, second_reply), (EX_FU, example_reply), (ANT_FU, antonym_reply)]
        for fu, fn in rng.sample(fus, rng.choice((0, 0, 1, 1, 2, 3))):
            turns.append((rng.choice(fu).replace("{w}", e["word"]), fn(e)))
        return turns
    if r < 0.5 and forms:
        f, e = rng.choice(forms)
        return [(rng.choice(DEF_FRAMES).replace("{w}", f).replace("{W}", cap(f)), form_reply(f, e))]
    if r < 0.82:
        return [rng.choice(guide_pairs)]
    if r < 0.9:
        return [(rng.choice(refusal_questions(rng, 1)), REFUSAL)]
    if r < 0.94:
        return [(rng.choice(IDENTITY_Q + CAPS_Q), None)]
    return [(rng.choice(THANKS_Q), THANKS)]


def fixed_reply(q):
    return CAPABILITIES if q in CAPS_Q else IDENTITY


EVAL_LONG, EVAL_LONG_SEED = 20, 4242


def long_conversations(rng, lex, forms, guide_pairs, n, length, turns_wanted=(12, 30), cut=True):
    """n conversations of turns_wanted turns, then cut as the chat cuts them
    when the context fills: the oldest exchanges dropped until the prompt for
    the last reply and the reply's reserve fit in CTX.  length(turn): the
    tokens of (a user turn with the assistant header, its reply and </s>)."""
    head = length(None)[0]
    out = []
    for _ in range(n):
        want = rng.randint(*turns_wanted)
        turns = [(rng.choice(GREET_Q), GREETING)] if rng.random() < 0.4 else []
        while len(turns) < want:
            turns += [(q, a if a is not None else fixed_reply(q)) for q, a in
                      sample_turns(rng, lex, forms, guide_pairs)]
        if rng.random() < 0.3:
            turns.append((rng.choice(BYE_Q), GOODBYE))
        cost = [length(t) for t in turns]
        prompt = head + sum(u + a for u, a in cost[:-1]) + cost[-1][0]
        while cut and len(turns) > 1 and prompt + REPLY_RESERVE > CTX:
            prompt -= sum(cost[0])
            turns, cost = turns[1:], cost[1:]
        out.append(turns)
    return out


def turn_length(R):
    """length(turn) for long_conversations: (user turn with the assistant
    header, reply with </s>) in tokens; length(None): the head's."""
    cache = {}

    def length(t):
        if t is None:
            return (len(R.head()), 0)
        if t not in cache:
            cache[t] = (len(R.user(t[0])), len(R.reply("\n<|assistant|>\n", t[1])) + 1)
        return cache[t]
    return length


# ------------------------------------------------------------------ rendering (src/template/template.c)

class Renderer:
    """openelm-instruct exactly as elmchat renders it: one SentencePiece encode
    (with the dummy prefix) per run between specials; a reply is the ids of
    enc(gp + reply) after enc(gp), else its mid-text encoding."""

    def __init__(self, sp):
        self.sp = sp
        self.nl = sp.encode("\n")

    def run(self, s):
        return self.sp.encode(s) if s else []

    def cont(self, s):
        b = self.run("\n" + s)
        if b[:len(self.nl)] == self.nl:
            return b[len(self.nl):]
        return self.run(s)

    def reply(self, gp, text):
        a = self.run(gp)
        b = self.run(gp + text)
        if b[:len(a)] == a:
            return b[len(a):]
        return self.cont(text)

    def head(self, system=""):
        """<s>, the system turn and its </s>."""
        return [1] + self.run("<|system|>\n" + system) + [2]

    def user(self, u):
        """A user turn, its </s> and the assistant header: a prompt's end."""
        return self.run("\n<|user|>\n" + u) + [2] + self.run("\n<|assistant|>\n")

    def render(self, turns, system=""):
        """-> ids, mask (1 where the model is trained: reply tokens and their EOS)"""
        ids = self.head(system)
        mask = [0] * len(ids)
        for u, a in turns:
            x = self.user(u)
            ids += x
            mask += [0] * len(x)
            r = self.reply("\n<|assistant|>\n", a) + [2]
            ids += r
            mask += [1] * len(r)
        return ids, mask


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "corpus"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--split-seed", type=int,
                    help="the validation split's hash seed (default: --seed); corpora of other --seed "
                    "with the same --split-seed keep every dialogue text on one side of the split")
    ap.add_argument("--vocab", type=int, default=4000, help="with --train-tokenizer: its size")
    ap.add_argument("--val-frac", type=float, default=0.03)
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.model"),
                    help="the vocabulary (default: the shipped models' own, tools/demo-model/tokenizer.model)")
    ap.add_argument("--train-tokenizer", action="store_true",
                    help="train a new SentencePiece vocabulary on the corpus instead (models trained "
                    "on it can no longer draft for, or replace, the shipped ones)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    lex, removed, unknown, forms = build_lexicon()
    taught = taught_forms(lex, forms)
    with open(os.path.join(args.out, "lexicon.tsv"), "w") as f:
        for e in lex:
            f.write("\t".join([e["word"], e["pos"], e["gloss"], e["example"], ", ".join(e["synonyms"]),
                               e["antonym"], e["second"][1] if e["second"] else "", str(e["tagcount"])]) + "\n")
    print(f"lexicon: {len(lex)} words ({len(removed)} removed: {' '.join(removed)})", file=sys.stderr)
    write_everyday(os.path.join(args.out, "everyday.tsv"), lex, forms)

    import sentencepiece as spm
    # lengths for the long conversations' cut: the shipped vocabulary's (with
    # --train-tokenizer the new one's differ a little)
    D, held_long = make_dialogues(lex, unknown, taught, args.seed,
                       turn_length(Renderer(spm.SentencePieceProcessor(model_file=args.tokenizer))))
    # Validation split by a hash of the dialogue's text (corpus 7; before, of
    # its index, so a corpus that inserted dialogues moved others across the
    # split, and copies of one dialogue fell on both sides).  The fixed
    # phrases (a greeting, thanks, goodbye, identity question alone) always
    # train (corpus 8): there are a few dozen, each must get its one reply,
    # and one held out is one never learned ("Thx" was, in corpus 7).
    split_seed = args.seed if args.split_seed is None else args.split_seed
    train, val = [], []
    for k, turns in D:
        text = "\x1f".join(m for t in turns for m in t)
        h = int(hashlib.sha256(f"{split_seed}:{text}".encode()).hexdigest()[:8], 16) / 2**32
        (val if h < args.val_frac and k not in FIXED_PHRASE_KINDS else train).append((k, turns))
    with open(os.path.join(args.out, "eval_long.jsonl"), "w") as f:
        for turns in held_long:
            f.write(json.dumps({"kind": "long", "messages": [m for t in turns for m in
                                                             (["user", t[0]], ["assistant", t[1]])]}) + "\n")
    for name, part in (("train", train), ("val", val)):
        with open(os.path.join(args.out, name + ".jsonl"), "w") as f:
            for k, turns in part:
                f.write(json.dumps({"kind": k, "messages": [m for t in turns for m in
                                                            (["user", t[0]], ["assistant", t[1]])]}) + "\n")

    prefix = os.path.join(args.out, "tokenizer")
    if not args.train_tokenizer:
        shutil.copyfile(args.tokenizer, prefix + ".model")
    else:
        # tokenizer input: every line of every run as elmchat would send it
        with open(os.path.join(args.out, "spm_input.txt"), "w") as f:
            f.write("<|system|>\n<|user|>\n<|assistant|>\n")
            for k, turns in train:
                for u, a in turns:
                    f.write("<|user|>\n" + u.replace("\n", " ") + "\n<|assistant|>\n" + a.replace("\n", " ") + "\n")
        # relative paths: the trainer stores them in the model, which keeps the file byte-identical
        cwd = os.getcwd()
        os.chdir(args.out)
        spm.SentencePieceTrainer.train(
            input="spm_input.txt", model_prefix="tokenizer", model_type="bpe", vocab_size=args.vocab,
            byte_fallback=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True,
            split_digits=True, allow_whitespace_only_pieces=True, character_coverage=1.0,
            num_threads=1, input_sentence_size=0, shuffle_input_sentence=False, max_sentence_length=8192,
            seed_sentencepiece_size=1000000, minloglevel=2)
        os.chdir(cwd)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    R = Renderer(sp)

    import torch
    stats = {"lexicon_words": len(lex), "removed_words": removed, "unknown_words": len(unknown),
             "vocab_size": sp.get_piece_size(), "seed": args.seed,
             "tokenizer": "trained" if args.train_tokenizer else os.path.basename(args.tokenizer),
             "everyday": everyday_coverage(lex, forms, removed)}
    if split_seed != args.seed:
        stats["split_seed"] = split_seed
    for name, part in (("train", train), ("val", val)):
        seqs, masks, kinds = [], [], []
        n_tok = n_loss = 0
        for k, turns in part:
            ids, mask = R.render(turns)
            seqs.append(torch.tensor(ids, dtype=torch.int16))
            masks.append(torch.tensor(mask, dtype=torch.bool))
            kinds.append(k)
            n_tok += len(ids)
            n_loss += sum(mask)
        torch.save({"ids": seqs, "mask": masks, "kinds": kinds}, os.path.join(args.out, name + ".pt"))
        by_kind = {}
        for k in kinds:
            by_kind[k] = by_kind.get(k, 0) + 1
        stats[name] = {"dialogues": len(part), "tokens": n_tok, "loss_tokens": n_loss,
                       "max_len": max(len(s) for s in seqs), "by_kind": by_kind}
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    print(json.dumps({k: v for k, v in stats.items() if k != "removed_words"}, indent=1))


if __name__ == "__main__":
    main()
