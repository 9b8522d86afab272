#!/usr/bin/env python3
"""json_schema_check.py: replies sampled under JSON schemas must parse and
validate (test-json-schema.sh runs it; TAP).

    json_schema_check.py SCHEMA_SAMPLE MODEL N MAX_TOKENS SCHEMA_FILE...

For each schema, N replies of the model at temperature 1 (tests/engine/
schema-sample.c) are parsed with json and validated with jsonschema
(formats checked too)."""
import json
import subprocess
import sys

import jsonschema

sample, model, n, max_tokens = sys.argv[1:5]
files = sys.argv[5:]
t = 0
failed = False
for path in files:
    with open(path, encoding='utf-8') as f:
        schema = json.load(f)
    out = subprocess.run([sample, model, path, n, '1.0', max_tokens], capture_output=True,
                         encoding='utf-8', errors='replace',
                         text=True)
    lines = out.stdout.splitlines()
    t += 1
    bad = []
    if out.returncode != 0:
        bad.append('schema-sample failed: %s %s' % (out.stdout[:300], out.stderr[:300]))
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    valid = 0
    for line in lines:
        if line.startswith('CUT'):
            bad.append('a reply ended before its value was complete')
            continue
        try:
            reply = json.loads(line)
        except ValueError:
            bad.append('schema-sample said: %r' % line[:300])
            continue
        try:
            value = json.loads(reply)
        except ValueError as e:
            bad.append('not JSON (%s): %r' % (e, reply[:200]))
            continue
        try:
            validator.validate(value)
            valid += 1
        except jsonschema.ValidationError as e:
            bad.append('invalid (%s): %r' % (e.message, reply[:200]))
    name = path.rsplit('/', 1)[-1]
    if bad or valid != int(n):
        failed = True
        print('not ok %d - %s: %d of %s replies valid' % (t, name, valid, n))
        for b in bad[:3]:
            print('#   ' + b)
    else:
        print('ok %d - %s: %d replies at temperature 1 parse and validate' % (t, name, valid))
print('1..%d' % t)
sys.exit(1 if failed else 0)
