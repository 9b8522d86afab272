"""Corpus 5: guide questions that teach the model to answer by the words that
matter, not by the frame around them.  Corpus 4's models answered the
trained phrasings and little else: on questions nobody had tuned the corpus
for they named the right command 15-18 % of the time.  So every topic also
comes

  - with WordNet synonyms for its verb and nouns ("close the program" ->
    "shut the program", "close the plan"); a wrong sense now and then is
    noise the model learns to live with,
  - after a sentence that has nothing to do with it (a WordNet example, a
    remark about the user's day), so a question's first words say nothing,
  - as bare keywords ("close program"), and with function words dropped,
  - (corpus 7) with a qualifier after it that names no fact ("... for this
    chat?", "... right now?"), so a question's last words say nothing either:
    corpus 6's large model answered "Which command adjusts top-p for this
    chat?" with /rename, the fact whose topics end in "this conversation".

The held-out filter of build_corpus.py applies to all of them.
"""

import re

# Words never replaced: elmchat's own nouns (a synonym of "session" is not a
# way to ask about sessions) and function words.
KEEP = set("""a an the i my me to of in on for with and or but is are be it its this that
what which how do does can could would should will there any way some one up out from by at as
all every each another other new old last first next more less own same
elmchat model models chat chats conversation conversations session sessions command commands
key keys message messages reply replies answer answers template templates prompt system
context token tokens exchange exchanges line input screen history tokenizer gguf openelm
huggingface hugging face markdown slash tab pin unpin vi mode colour colours color colors
memory threads""".split())

# Remarks that carry no guide content.
REMARKS = [
    "I just installed elmchat.", "This is my first day with it.", "Sorry if this is obvious.",
    "I'm on a laptop.", "I use Debian.", "Thanks for the earlier answer.", "Quick one.",
    "I have a small problem.", "I read the README but I'm still unsure.", "It's late here.",
    "I'm trying elmchat for the first time.", "Something else now.", "Hi again.",
    "My friend told me about this program.", "I'm not very technical.", "Good morning.",
    "I'm back with another question.", "No rush.", "I couldn't find it in the docs.",
]

# Qualifiers that name no fact (corpus 7): every fact's questions get them.
QUALIFIERS = [
    "for this chat", "in this conversation", "right now", "in elmchat", "here", "please",
    "for the current conversation", "in the current session", "again", "quickly", "if possible",
    "by the way", "for me", "today", "in this window", "for this session", "while I'm chatting",
    "at the moment", "without losing anything", "in the app",
]


class Augmenter:
    def __init__(self, rng, synonyms, examples):
        """synonyms: word -> [words]; examples: sentences with no guide content."""
        self.rng, self.synonyms, self.examples = rng, synonyms, examples

    def swap_words(self, topic):
        """The topic with one or two of its words replaced by WordNet synonyms."""
        words = topic.split(" ")
        slots = [i for i, w in enumerate(words) if w in self.synonyms]
        if not slots:
            return None
        for i in self.rng.sample(slots, min(len(slots), self.rng.choice((1, 1, 2)))):
            words[i] = self.rng.choice(self.synonyms[words[i]])
        return " ".join(words)

    def keywords(self, topic):
        kw = [w for w in topic.split(" ") if w not in KEEP or w in ("session", "model", "chat")]
        return " ".join(kw) if kw else None

    def drop_function_words(self, q):
        out = [w for w in q.split(" ") if w.lower().strip("?.,") not in KEEP or self.rng.random() > 0.3]
        return " ".join(out)

    def qualify(self, q):
        """q with a qualifier before its closing punctuation."""
        qual = self.rng.choice(QUALIFIERS)
        if q[-1:] in "?.!":
            return q[:-1] + " " + qual + q[-1]
        return q + " " + qual

    def context(self):
        if self.rng.random() < 0.5:
            return self.rng.choice(REMARKS)
        s = self.rng.choice(self.examples)
        return s[:1].upper() + s[1:] + ("" if s.endswith((".", "!", "?")) else ".")

    def questions(self, topics, verb_frames, noun_frames, n):
        """n questions (or fewer) for one fact's topics."""
        out = set()
        for _ in range(n * 4):
            if len(out) >= n:
                break
            t = self.rng.choice(topics)
            noun = t.startswith("N:")
            t = t[2:] if noun else t
            how = self.rng.random()
            if how < 0.45:
                t2 = self.swap_words(t)
                if not t2:
                    continue
                fr = self.rng.choice(noun_frames if noun else verb_frames)
                q = fr.replace("{t}", t2).replace("{T}", t2[:1].upper() + t2[1:])
            elif how < 0.6:
                k = self.keywords(t)
                if not k:
                    continue
                q = self.rng.choice((k, k + "?", k[:1].upper() + k[1:] + "?", "elmchat " + k))
            else:
                fr = self.rng.choice(noun_frames if noun else verb_frames)
                q = fr.replace("{t}", t).replace("{T}", t[:1].upper() + t[1:])
                if self.rng.random() < 0.4:
                    q = self.drop_function_words(q)
                    if not q.strip(" ?.,!"):  # every word was a function word
                        continue
            if self.rng.random() < 0.3:
                q = self.qualify(q)
            if self.rng.random() < 0.5:
                q = self.context() + " " + q[:1].upper() + q[1:]
            out.add(re.sub(r"\s+", " ", q).strip())
        return sorted(out)
