"""The GBNF matcher against an independent reference: regular languages
written twice, as GBNF and as a Python `re` pattern, and many strings (random
ones over an alphabet that matters to the pattern, plus mutations of matching
ones) on which tests/grammar_check (built by tests/CMakeLists.txt) must agree
with re.fullmatch. Both sides work on code points, so UTF-8 classes,
multi-byte literals and `.` are compared too."""
import json
import random
import re
import subprocess

import pytest

from conftest import grammar_check_bin


# (name, GBNF, regular expression (re.DOTALL: GBNF's `.` takes newlines), alphabet, seeds that match)
CASES = [
    ("star", 'root ::= "a"*', r"a*", "ab", ["", "aaa"]),
    ("plus-alt", 'root ::= ("ab" | "c")+', r"(?:ab|c)+", "abc", ["abcab", "c"]),
    ("count", "root ::= [0-9]{2,4}", r"[0-9]{2,4}", "0123a", ["12", "1234"]),
    ("opt-exact", 'root ::= "x"? "y"{3}', r"x?y{3}", "xy", ["yyy", "xyyy"]),
    ("negated", 'root ::= [a-c]+ "-" [^a-c\\n]', r"[a-c]+-[^a-c\n]", "abc-d\n\u00e9", ["ab-d", "c-\u00e9"]),
    ("ident", "root ::= [a-zA-Z_] [a-zA-Z0-9_]*", r"[a-zA-Z_][a-zA-Z0-9_]*", "aZ_09-", ["a", "_a9"]),
    ("number", 'root ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)?', r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?",
     "-0159.", ["0", "-10.5", "999"]),
    ("nested-rep", 'root ::= (("a" | "b") "c"?){1,3}', r"(?:[ab]c?){1,3}", "abc", ["acbc", "abc"]),
    ("greek-dot", 'root ::= [\u03b1-\u03c9]+ " " .', r"[\u03b1-\u03c9]+ .", "\u03b1\u03b2\u03c9\u0391 a\n\U0001F600",
     ["\u03b1 a", "\u03b2\u03c9 \n"]),
    ("emoji", 'root ::= "\U0001F600"+ | [\\U0001F600-\\U0001F64F]{2}', "\U0001F600+|[\U0001F600-\U0001F64F]{2}",
     "\U0001F600\U0001F601\U0001F64F\U0001F680a", ["\U0001F600", "\U0001F601\U0001F64F"]),
    ("tag", 'root ::= "<" [^>]* ">"', r"<[^>]*>", "<>a \u00e9", ["<>", "<a \u00e9>"]),
    ("email", 'root ::= [a-z]+ "@" [a-z]+ ("." [a-z]+)+', r"[a-z]+@[a-z]+(?:\.[a-z]+)+", "ab@.", ["a@b.c", "ab@ab.a.b"]),
    ("prefix-rep", 'root ::= ("ab"){0,2} "b"{1,}', r"(?:ab){0,2}b+", "ab", ["b", "ababbb"]),
    ("escapes", 'root ::= "\\"" ([^"\\\\] | "\\\\" ["\\\\n])* "\\""', r'"(?:[^"\\]|\\["\\n])*"', '"\\na',
     ['""', '"a\\n\\""']),
    ("shared-prefix", 'root ::= "abc" | "ab" | "abd" "e"*', r"abc|ab|abde*", "abcde", ["ab", "abdee"]),
    ("hex", "root ::= ([0-9a-fA-F]{2})+ [^0-9a-fA-F]?", r"(?:[0-9a-fA-F]{2})+[^0-9a-fA-F]?", "0aFg\u00ff",
     ["0a", "ffFFg"]),
    ("rules", 'root ::= kv ("," kv)*\nkv ::= key "=" val\nkey ::= [a-z]+\nval ::= [0-9]+ | "\\"" [^"]* "\\""',
     r'[a-z]+=(?:[0-9]+|"[^"]*")(?:,[a-z]+=(?:[0-9]+|"[^"]*"))*', 'a=1,"', ["a=1", 'a="x",aa=11']),
]


def mutate(rng, s, alphabet):
    i = rng.randrange(len(s) + 1)
    op = rng.randrange(3)
    c = rng.choice(alphabet)
    if op == 0 or not s:
        return s[:i] + c + s[i:]
    i = min(i, len(s) - 1)
    return s[:i] + (c if op == 1 else "") + s[i + 1:]


def strings(rng, pattern, alphabet, seeds):
    out = list(seeds)
    for _ in range(400):
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(10))))
    matching = [s for s in out if pattern.fullmatch(s)]
    for _ in range(400):
        s = rng.choice(matching)
        for _ in range(rng.randrange(1, 4)):
            s = mutate(rng, s, alphabet)
        out.append(s)
        if pattern.fullmatch(s):
            matching.append(s)
    return out


@pytest.mark.parametrize("name,gbnf,regex,alphabet,seeds", CASES, ids=[c[0] for c in CASES])
def test_grammar_matches_re(tmp_path, name, gbnf, regex, alphabet, seeds):
    binary = grammar_check_bin()
    pattern = re.compile(regex, re.DOTALL)
    for s in seeds:
        assert pattern.fullmatch(s), f"seed {s!r} does not match the reference pattern"
    rng = random.Random(name)
    texts = strings(rng, pattern, alphabet, seeds)
    gfile = tmp_path / "g.gbnf"
    gfile.write_text(gbnf + "\n", encoding="utf-8")
    stdin = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)
    r = subprocess.run([str(binary), str(gfile)], input=stdin.encode("utf-8"), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    got = r.stdout.decode().split()
    assert len(got) == len(texts)
    n_match = 0
    for t, g in zip(texts, got):
        want = pattern.fullmatch(t) is not None
        n_match += want
        assert (g == "1") == want, f"{name}: {t!r}: grammar_check says {g}, re says {int(want)}"
    # The strings must exercise both answers, or the comparison says little.
    assert 20 <= n_match <= len(texts) - 20, f"{name}: {n_match} of {len(texts)} match"


def test_grammar_error_exit(tmp_path):
    binary = grammar_check_bin()
    gfile = tmp_path / "bad.gbnf"
    gfile.write_text('root ::= "a" undefined-rule\n')
    r = subprocess.run([str(binary), str(gfile)], input=b"", capture_output=True, timeout=60)
    assert r.returncode == 2
    assert "grammar line 1 column 14: undefined rule 'undefined-rule'" in r.stderr.decode()
