#!/bin/sh
# test-structured.sh: structured output (issue 47) through the binary and
# the engine: 33 JSON schemas (tests/data/schemas/: nested objects, arrays,
# enums, consts, refs, formats, anyOf/oneOf, maps), 50 replies each at
# temperature 1 from a random-weight model, all parse and validate with
# Python's jsonschema; run --json/--json-schema/--grammar on the demo
# model; the same reply with and without prompt-lookup drafts; refused
# schemas and grammars named with their JSON pointer or line and column;
# exit status 1 when -n cuts the value.
. "${top_srcdir:-.}/tests/lib/cli-test.sh"
cli_tmpdir structured
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/cfg" XDG_DATA_HOME="$tmp/data" XDG_CACHE_HOME="$tmp/cache"
SAMPLE=$(dirname "$ELMCHAT")/tests/engine/schema-sample
DEMO="$top_srcdir/models/guide-small-instruct.gguf"
"$GEN" --preset micro --synthetic-tokenizer -o "$tmp/m" >/dev/null 2>&1
ok $? "a generated random-weight checkpoint"

# --- the schemas, 50 replies each
if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 "$top_srcdir/tests/engine/json_schema_check.py" "$SAMPLE" "$tmp/m" 50 1500 \
        "$top_srcdir"/tests/data/schemas/*.json >"$tmp/schemas.tap" 2>&1
    rc=$?
    grep -v '^ok\|^1\.\.' "$tmp/schemas.tap" | sed 's/^/#   /'
    nschemas=$(grep -c "^ok" "$tmp/schemas.tap")
    [ $rc -eq 0 ] && [ "$nschemas" -ge 30 ]
    ok $? "$nschemas schemas: every one of 50 replies at temperature 1 parses and validates (jsonschema)"
else
    skip "the schemas' replies validate" "no python3-jsonschema"
fi

# --- the binary on the demo model
run() { "$ELMCHAT" run -m "$DEMO" "$@"; }
q='answer in JSON with fields word and definition'
run -p "$q" --json >"$tmp/json" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/json" "$tmp/err"
[ $rc -eq 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/json"
ok $? "run --json: the demo model's reply is JSON"
schema='{"type":"object","properties":{"word":{"type":"string"},"definition":{"type":"string"}},"required":["word","definition"],"additionalProperties":false}'
run -p "$q" --json-schema "$schema" >"$tmp/ws" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/ws" "$tmp/err"
[ $rc -eq 0 ] && python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
assert sorted(v) == ["definition", "word"] and all(isinstance(x, str) for x in v.values())' "$tmp/ws"
ok $? "run --json-schema JSON: an object of word and definition, strings"
printf '%s\n' "$schema" >"$tmp/schema.json"
run -p "$q" --json-schema "$tmp/schema.json" >"$tmp/ws2" 2>&1 && cmp -s "$tmp/ws" "$tmp/ws2"
ok $? "--json-schema FILE: the same reply as the schema's text"
short='{"type":"object","properties":{"word":{"type":"string","maxLength":20},"definition":{"type":"string","maxLength":60}},"required":["word","definition"]}'
for t in 0 1; do
    run -p "$q" --json-schema "$short" --temp $t --seed 7 -n 200 >"$tmp/l$t" 2>&1
    r1=$?
    run -p "$q" --json-schema "$short" --temp $t --seed 7 -n 200 --no-lookup >"$tmp/n$t" 2>&1
    r2=$?
    sed 's/^/#   /' "$tmp/l$t"
    [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$tmp/l$t" "$tmp/n$t"
    ok $? "temperature $t: the same reply with prompt-lookup drafts and without"
done
printf 'root ::= ("yes" | "no") " because " [a-z ]{3,40} "."\n' >"$tmp/g.gbnf"
run -p 'is the sky blue?' --grammar "$tmp/g.gbnf" >"$tmp/g" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/g" "$tmp/err"
[ $rc -eq 0 ] && grep -Eqx '(yes|no) because [a-z ]{3,40}\.' "$tmp/g"
ok $? "run --grammar FILE: the reply matches the grammar"
run -p "$q" --json-schema "$schema" -n 3 >"$tmp/cut" 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "cut before the JSON value was complete (max tokens 3: raise -n): the output is not valid" "$tmp/err"
ok $? "-n 3 cuts the value: exit 1 and a message saying so"

# --- refused
run -p x --json-schema '{"type":"object","properties":{"a":{"type":"string","pattern":"^a"}}}' \
    >/dev/null 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "/properties/a/pattern: unsupported keyword 'pattern'" "$tmp/err"
ok $? "an unsupported keyword: named with its JSON pointer"
run -p x --json-schema '{"$ref":"#/$defs/nope"}' >/dev/null 2>"$tmp/err"
grep -q '/\$ref: \$ref .#/\$defs/nope. names no definition' "$tmp/err"
ok $? "a \$ref to nothing: named"
run -p x --json-schema '{"type":' >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "malformed JSON" "$tmp/err"
ok $? "malformed schema JSON: refused"
printf 'root ::= item+\n\nitem ::= "a" | [b-\n' >"$tmp/bad.gbnf"
run -p x --grammar "$tmp/bad.gbnf" >/dev/null 2>"$tmp/err"
rc=$?
sed 's/^/#   /' "$tmp/err"
[ $rc -eq 1 ] && grep -q "bad.gbnf: line 3, column 16: character class not closed" "$tmp/err"
ok $? "a malformed grammar: the file, line and column"
printf 'root ::= list\nlist ::= list "," item | item\nitem ::= [0-9]\n' >"$tmp/lr.gbnf"
run -p x --grammar "$tmp/lr.gbnf" >/dev/null 2>"$tmp/err"
grep -q "line 2, column 1: left recursion (list -> list)" "$tmp/err"
ok $? "left recursion: refused, named"
run -p x --json --grammar "$tmp/g.gbnf" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "give one" "$tmp/err"
ok $? "--json with --grammar: a usage error"
run -p x --grammar "$tmp/none.gbnf" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "none.gbnf" "$tmp/err"
ok $? "a missing grammar file: named"
echo "1..$n"
[ "$failed" -eq 0 ]
