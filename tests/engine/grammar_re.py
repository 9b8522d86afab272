#!/usr/bin/env python3
"""grammar_re.py: the GBNF matcher against Python's re on random regular
grammars (test-grammar-re.sh runs it; TAP on stdout).

Each grammar is a random expression (literals with escapes and non-ASCII
characters, classes with ranges and negation, '.', sequences, alternation,
groups, * + ? {m} {m,} {m,n}, references to other rules) written both as
GBNF and as a regular expression.  Every string checked must be a whole
match exactly when re.fullmatch says so, and a proper prefix of a match
(also one cut inside a UTF-8 character) must be reported as a prefix."""
import random
import re
import subprocess
import sys

FIT = sys.argv[1]
TMP = sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 250
rng = random.Random(47)
ALPHA = ['a', 'b', 'c', '"', '\\', ']', '-', '\u00e9', '\u4e2d', '\U0001F600', '\n']


def gbnf_char(c, in_class):
    esc = {'\n': '\\n', '\\': '\\\\', '"': '\\"', ']': '\\]', '-': '\\-', '[': '\\['}
    if c in esc and (in_class or c in '\n\\"'):
        return esc[c]
    if c == '\U0001F600' and rng.random() < 0.5:
        return '\\U0001F600'
    if c == '\u00e9' and rng.random() < 0.5:
        return '\\xE9' if rng.random() < 0.5 else '\\u00e9'
    return c


class G:
    def __init__(self):
        self.rules = []  # (name, gbnf, regex)

    def expr(self, depth):
        """(gbnf, regex, nullable, sample-generator)"""
        kinds = ['lit', 'cls', 'any', 'ref']
        if depth > 0:
            kinds += ['seq', 'alt', 'rep', 'rep', 'group']
        k = rng.choice(kinds)
        if k == 'lit':
            s = ''.join(rng.choice(ALPHA) for _ in range(rng.randint(1, 3)))
            return ('"' + ''.join(gbnf_char(c, False) for c in s) + '"', re.escape(s), False,
                    lambda: s)
        if k == 'cls':
            items, chars = [], set()
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.4:
                    lo, hi = sorted(rng.sample(['a', 'b', 'c', 'd', '\u00e9', '\u4e2d'], 2))
                    items.append((lo, hi))
                    chars |= {c for c in ALPHA + ['d'] if lo <= c <= hi}
                else:
                    c = rng.choice(ALPHA)
                    items.append((c, c))
                    chars.add(c)
            neg = rng.random() < 0.3
            g = '[' + ('^' if neg else '') + ''.join(
                gbnf_char(lo, True) + ('' if lo == hi else '-' + gbnf_char(hi, True))
                for lo, hi in items) + ']'
            r = '[' + ('^' if neg else '') + ''.join(
                re.escape(lo) + ('' if lo == hi else '-' + re.escape(hi)) for lo, hi in items) + ']'
            pool = [c for c in ALPHA + ['d', 'z'] if (c in chars) != neg or
                    any(lo <= c <= hi for lo, hi in items) != neg]
            pool = [c for c in pool if any(lo <= c <= hi for lo, hi in items) != neg]
            return g, r, False, lambda: rng.choice(pool) if pool else 'z'
        if k == 'any':
            return '.', '.', False, lambda: rng.choice(ALPHA)
        if k == 'ref':
            sub = self.expr(depth - 1 if depth > 0 else 0)
            name = 'r%d' % len(self.rules)
            self.rules.append((name, sub[0]))
            return name, '(?:' + sub[1] + ')', sub[2], sub[3]
        if k == 'seq' or k == 'group':
            parts = [self.expr(depth - 1) for _ in range(rng.randint(2, 3))]
            g = ' '.join(p[0] for p in parts)
            if k == 'group':
                g = '(' + g + ')'
            return (g, ''.join('(?:' + p[1] + ')' for p in parts), all(p[2] for p in parts),
                    lambda: ''.join(p[3]() for p in parts))
        if k == 'alt':
            parts = [self.expr(depth - 1) for _ in range(rng.randint(2, 3))]
            return ('(' + ' | '.join(p[0] for p in parts) + ')',
                    '(?:' + '|'.join(p[1] for p in parts) + ')', any(p[2] for p in parts),
                    lambda: rng.choice(parts)[3]())
        # repetition of a group; unbounded only over what cannot be empty
        sub = self.expr(depth - 1)
        ops = ['?', '{2}', '{0,2}', '{1,3}']
        if not sub[2]:
            ops += ['*', '+', '{2,}']
        op = rng.choice(ops)
        lo, hi = {'?': (0, 1), '*': (0, 3), '+': (1, 3), '{2}': (2, 2), '{0,2}': (0, 2),
                  '{1,3}': (1, 3), '{2,}': (2, 4)}[op]
        return ('(' + sub[0] + ')' + op, '(?:' + sub[1] + ')' + op, sub[2] or lo == 0,
                lambda: ''.join(sub[3]() for _ in range(rng.randint(lo, hi))))


def fits(grammar, strings):
    path = TMP + '/g.gbnf'
    with open(path, 'w', encoding='utf-8') as f:
        f.write(grammar)
    inp = ''.join(s.hex() + '\n' for s in strings)
    out = subprocess.run([FIT, path], input=inp, capture_output=True, text=True)
    return out.returncode, out.stdout.split('\n')


n = 0
failed = 0
for gi in range(N):
    g = G()
    top = g.expr(3)
    text = '# grammar %d\nroot ::= %s\n' % (gi, top[0])
    for name, body in g.rules:
        text += '%s ::= %s  # helper\n' % (name, body)
    regex = re.compile(top[1], re.DOTALL)
    strings = set()
    for _ in range(12):
        strings.add(top[3]().encode())
    for _ in range(12):
        strings.add(''.join(rng.choice(ALPHA) for _ in range(rng.randint(0, 5))).encode())
    prefixes = set()
    for s in list(strings):
        if regex.fullmatch(s.decode()):
            for cut in range(len(s)):
                prefixes.add(s[:cut])
    strings = sorted(strings | prefixes)
    rc, got = fits(text, strings)
    n += 1
    bad = []
    if rc != 0:
        bad.append('refused: ' + got[0])
    else:
        for s, fit in zip(strings, got):
            try:
                whole = regex.fullmatch(s.decode()) is not None
            except UnicodeDecodeError:
                whole = False
            if whole != (fit == 'match'):
                bad.append('%r: re says %s, grammar says %s' % (s, whole, fit))
            elif not whole and s in prefixes and fit != 'prefix':
                bad.append('%r: a prefix of a match, grammar says %s' % (s, fit))
    if bad:
        failed += 1
        print('not ok %d - grammar %d (%d strings)' % (n, gi, len(strings)))
        print('#   ' + text.replace('\n', '\n#   '))
        print('#   regex: %s' % top[1])
        for b in bad[:5]:
            print('#   ' + b)
    else:
        print('ok %d - grammar %d: %d strings agree with re' % (n, gi, len(strings)))
print('1..%d' % n)
sys.exit(1 if failed else 0)
