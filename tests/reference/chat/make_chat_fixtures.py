#!/usr/bin/env python3
"""Reference fixtures for hearth's Jinja chat-template interpreter, rendered by
Python jinja2 configured the way Hugging Face transformers renders chat
templates (transformers/utils/chat_template_utils.py: _compile_jinja_template):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, loopcontrols])
  tojson = json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  globals: raise_exception(message) raises; strftime_now(fmt) formats the
  current time (here the fixed FIXED_NOW, which the C test uses too).

Writes
  templates/<name>.jinja  the templates (SmolLM2's from its GGUF; Gemma 3's from
                          google/gemma-3-*-it tokenizer_config.json, since the
                          270M GGUF carries none; the rest from llama.cpp's
                          models/templates, fetched from Hugging Face there)
  templates.json          each template over a set of conversations, with and
                          without the generation prompt: the expected text, or
                          the message jinja2 raised
  features.json           small templates, one feature each, with variables

Usage: python3 tests/reference/chat/make_chat_fixtures.py  (needs jinja2 and,
for SmolLM2's template, gguf and models/SmolLM2-135M-Instruct.Q4_1.gguf)
"""
import datetime
import json
import os
import shutil
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
LLAMA_TEMPLATES = os.path.join(ROOT, "third_party", "llama-cpp-python-0.3.36", "src", "models", "templates")
FIXED_NOW = datetime.datetime(2025, 3, 14, 15, 9, 26)  # local time

GEMMA3 = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

# name -> (source file in llama.cpp's models/templates or None, bos_token, eos_token)
TEMPLATES = {
    "smollm2": (None, "<|im_start|>", "<|im_end|>"),
    "gemma3": (None, "<bos>", "<eos>"),
    "qwen2.5": ("Qwen-Qwen2.5-7B-Instruct.jinja", "", "<|im_end|>"),
    "qwen3": ("Qwen-Qwen3-0.6B.jinja", "", "<|im_end|>"),
    "llama3.1": ("meta-llama-Llama-3.1-8B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "llama3.2": ("meta-llama-Llama-3.2-3B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "llama3.3": ("meta-llama-Llama-3.3-70B-Instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "mistral-nemo": ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>"),
    "mistral-small-3.2": ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "<s>", "</s>"),
    "phi3.5": ("microsoft-Phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>"),
    "deepseek-r1-qwen": ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "<｜begin▁of▁sentence｜>",
                         "<｜end▁of▁sentence｜>"),
    "deepseek-r1-llama": ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "<｜begin▁of▁sentence｜>",
                          "<｜end▁of▁sentence｜>"),
    "gemma2": ("google-gemma-2-2b-it.jinja", "<bos>", "<eos>"),
    "qwq": ("Qwen-QwQ-32B.jinja", "", "<|im_end|>"),
    "hermes3-tool-use": ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "<|begin_of_text|>", "<|im_end|>"),
}

SYS = {"role": "system", "content": "You are a concise assistant."}
U1 = {"role": "user", "content": "What is the capital of France?"}
A1 = {"role": "assistant", "content": "Paris."}
U2 = {"role": "user", "content": "And of Italy?"}
A2 = {"role": "assistant", "content": "Rome."}
CONVERSATIONS = {
    "user": [U1],
    "system_user": [SYS, U1],
    "multi_turn": [U1, A1, U2],
    "system_multi_turn": [SYS, U1, A1, U2, A2, {"role": "user", "content": "Thanks!"}],
    "ends_with_assistant": [SYS, U1, A1],
    "unicode": [{"role": "user", "content": "Ça va? 日本語で答えて 🙂 — naïve façade, Ελληνικά, русский"},
                {"role": "assistant", "content": "はい、元気です 🎉"},
                {"role": "user", "content": "emoji: 👩‍👩‍👧 ✔ ∑ \u00a0nbsp"}],
    "quotes_newlines": [{"role": "system", "content": "Use \"double\" and 'single' quotes.\nTwo lines."},
                        {"role": "user", "content": "  padded with spaces and a tab\t\n\nand blank lines  \n"},
                        {"role": "assistant", "content": "Back\\slash {{ not a tag }} {% neither %} <|im_end|>"},
                        {"role": "user", "content": "json-ish: {\"a\": [1, 2]}"}],
    "thinking": [U1, {"role": "assistant", "content": "<think>\nThe user asks about France.\n</think>\n\nParis."}, U2],
    "empty_content": [{"role": "user", "content": ""}],
    "assistant_first": [A1, U1],
    "two_users": [U1, U2],
    "system_only": [SYS],
}


class Generation(Extension):
    """{% generation %}...{% endgeneration %} renders its body, as transformers' AssistantTracker does."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


def render(env, source, variables):
    try:
        return {"expected": env.from_string(source).render(**variables)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e)}


def smollm2_template():
    import gguf
    reader = gguf.GGUFReader(os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def write_templates():
    out = os.path.join(HERE, "templates")
    os.makedirs(out, exist_ok=True)
    for name, (src, _, _) in TEMPLATES.items():
        path = os.path.join(out, name + ".jinja")
        if src:
            shutil.copyfile(os.path.join(LLAMA_TEMPLATES, src), path)
        else:
            text = smollm2_template() if name == "smollm2" else GEMMA3
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)


def template_cases(env):
    cases = []
    for name, (_, bos, eos) in TEMPLATES.items():
        with open(os.path.join(HERE, "templates", name + ".jinja"), encoding="utf-8", newline="") as f:
            source = f.read()
        for conv_name, messages in CONVERSATIONS.items():
            for gen in (True, False):
                variables = {"messages": messages, "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos}
                case = {"template": name, "conversation": conv_name, "add_generation_prompt": gen,
                        "bos_token": bos, "eos_token": eos}
                case.update(render(env, source, variables))
                cases.append(case)
    return {"conversations": CONVERSATIONS, "cases": cases}


# (template, variables): one feature each; rendered by jinja2 into features.json.
FEATURES = [
    ("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7 / 2 }}", {}),
    ("{{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.0 }} {{ 1/3 }} {{ 2.5e-5 }} {{ 10 / 4 }} {{ -0.0 }} {{ 1e16 }} {{ 123456789.125 }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ true ~ 1.5 }}|{{ 'ab' * 3 }}|{{ 3 * 'x' }}|{{ [1] * 2 }}|{{ [1, 2] + [3] }}", {}),
    ("{{ x }}|{{ x is defined }}|{{ x is undefined }}|{{ x | default('d') }}|{{ '' | default('e', true) }}|{{ x ~ 'y' }}|{{ x | length }}", {}),
    ("{{ none }}|{{ true }}|{{ false }}|{{ [1, 'a', none, 1.5, true] }}|{{ {'a': 1, 'b': [2]} }}|{{ (1,) }}|{{ (1, 'b') }}|{{ () }}", {}),
    ("{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\tnl\\n', 'back\\\\slash'] }}", {}),
    ("{{ d.a }}|{{ d['a'] }}|{{ d.missing }}|{{ d.get('a') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('zz') }}|{{ 'a' in d }}|{{ d | length }}",
     {"d": {"a": 1, "b": 2}}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }}{% if not loop.last %},{% endif %}{% endfor %}|{{ d.keys() | list }}|{{ d.values() | list }}|{% for k in d %}{{ k }}{% endfor %}",
     {"d": {"z": 1, "a": 2, "m": 3}}),
    ("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
     {"xs": ["a", "b", "c"]}),
    ("{% for x in xs %}{{ loop.previtem }}-{{ x }}-{{ loop.nextitem }}|{{ loop.cycle('odd', 'even') }};{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% else %}empty{% endfor %}|{% for x in [] %}no{% else %}else{% endfor %}",
     {"xs": [1, 2, 3, 4]}),
    ("{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {"xs": [1, 2, 3, 4, 5]}),
    ("{% set a = 1 %}{% for x in [1, 2] %}{{ a }}{% set a = a + 10 %}{{ a }},{% endfor %}{{ a }}", {}),
    ("{% for x in [1, 2, 3] %}{% if loop.first %}{% set seen = 5 %}{% endif %}[{{ seen }}]{% endfor %}[{{ seen }}]", {}),
    ("{% set ns = namespace(total=0, items=[]) %}{% for x in [1, 2, 3] %}{% set ns.total = ns.total + x %}{% endfor %}{{ ns.total }}|{% set ns.extra = 'e' %}{{ ns.extra }}",
     {}),
    ("{% set ns = namespace() %}{% set ns.i = 0 %}{% for m in ms %}{% if m.role == 'user' %}{% set ns.i = ns.i + 1 %}{% endif %}{% endfor %}{{ ns.i }}",
     {"ms": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]}),
    ("{% if a %}A{% elif b %}B{% elif c %}C{% else %}D{% endif %}|{% if not a and b or c %}x{% endif %}|{{ 'y' if c else 'n' }}|{{ 'y' if a }}|",
     {"a": 0, "b": "", "c": [1]}),
    ("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ 1 != 2 }} {{ 2 >= 2 }}", {}),
    ("{{ 'ab' in 'cabd' }} {{ 1 in [1, 2] }} {{ 'x' not in [] }} {{ 'k' in {'k': 1} }} {{ not 1 == 2 }} {{ -2 ** 2 }} {{ 'a' ~ 1 == 'a1' }}", {}),
    ("{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ s | title }}|{{ s | capitalize }}|{{ s | length }}|{{ s | replace('l', 'L') }}|{{ s | replace('l', '_', 1) }}",
     {"s": "  hello wORLD-it's (x) \n"}),
    ("{{ s.startswith('ab') }} {{ s.endswith('yz') }} {{ s.startswith(('x', 'a')) }} {{ s.strip('az') }} {{ '  x  '.lstrip() }}| {{ '  x  '.rstrip() }}| {{ s.upper() }} {{ s.title() }} {{ \"it's\".title() }}",
     {"s": "abc-xyz"}),
    ("{{ s.split() }} {{ s.split(',') }} {{ s.split(',', 1) }} {{ '  a  b '.split() }} {{ 'a,b,c'.rsplit(',', 1) }} {{ s.split('</think>')[-1] }}",
     {"s": "a,b,,c </think> d"}),
    ("{{ s[1] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[::2] }} {{ s[:-2] }} {{ s[10:] }}|{{ xs[1:] }} {{ xs[::-1] }} {{ xs[-2:] }} {{ xs[5] }}|{{ xs[:1] }} {{ xs[3:0:-1] }}",
     {"s": "héllo→wörld", "xs": [1, 2, 3, 4]}),
    ("{{ xs | join(', ') }}|{{ xs | first }}|{{ xs | last }}|{{ xs | length }}|{{ xs | reverse | list }}|{{ xs | sort }}|{{ xs | sort(reverse=true) }}|{{ xs | unique | list }}|{{ xs | min }} {{ xs | max }} {{ xs | sum }}",
     {"xs": [3, 1, 2, 3]}),
    ("{{ ws | sort }}|{{ ws | sort(case_sensitive=true) }}|{{ ws | unique | list }}|{{ ws | join }}|{{ 'abc' | list }}|{{ 'abc' | first }}{{ 'abc' | last }}",
     {"ws": ["b", "B", "a", "C"]}),
    ("{{ ms | selectattr('role', 'equalto', 'user') | list | length }}|{{ ms | rejectattr('role', 'equalto', 'user') | map(attribute='content') | join('+') }}|{{ ms | map(attribute='role') | list }}|{{ ms | selectattr('tool') | list }}|{{ ms | map(attribute='x', default='-') | join }}",
     {"ms": [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}]}),
    ("{{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ xs | select('greaterthan', 2) | list }} {{ xs | map('string') | join('-') }} {{ ['a', 'b'] | map('upper') | list }} {{ xs | select | list }}",
     {"xs": [0, 1, 2, 3, 4]}),
    ("{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ v | tojson(sort_keys=true) }}|{{ v | tojson(separators=(',', ':')) }}|{{ 'é\"\\n<>&' | tojson }}|{{ 'é' | tojson(ensure_ascii=true) }}|{{ none | tojson }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson }}",
     {"v": {"name": "get_weather", "args": {"city": "Paris", "days": 3, "metric": True, "extra": None, "ratio": 0.5}, "list": [1, "two", [3]]}}),
    ("{{ v | tojson(indent=4) }}", {"v": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]}),
    ("{{ x is string }} {{ x is mapping }} {{ x is iterable }} {{ x is sequence }} {{ x is number }} {{ x is none }} {{ y is none }} {{ y is not none }} {{ z is mapping }} {{ u is iterable }} {{ u is string }}",
     {"x": "s", "y": None, "z": {}}),
    ("{{ 3 is odd }} {{ 3 is even }} {{ 6 is divisibleby 3 }} {{ 6 is divisibleby(4) }} {{ t is true }} {{ t is false }} {{ 1 is true }} {{ t is boolean }} {{ 1 is integer }} {{ 1.0 is float }} {{ 'a' is lower }} {{ 'A' is upper }} {{ x is sameas none }} {{ 2 is in [1, 2] }} {{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is ge 3 }}",
     {"t": True, "x": None}),
    ("{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }}", {}),
    ("{% macro outer(x) %}[{{ inner(x) }}|{{ g }}]{% endmacro %}{% macro inner(y) %}<{{ y * 2 }}>{% endmacro %}{% set g = 'G' %}{{ outer(3) }}", {}),
    ("{% macro box(t) %}<{{ caller() }}:{{ t }}>{% endmacro %}{% for i in [1, 2] %}{% call box('b') %}item {{ i }}{% endcall %}{% endfor %}", {}),
    ("{% macro render(m) -%}\n  {{ m.role }}: {{ m.content }}\n{%- endmacro %}\n{% for m in ms %}\n{{ render(m) }}\n{% endfor %}",
     {"ms": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}),
    ("{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]{% set up | upper %}shout{% endset %}{{ up }}|{% filter upper %}filtered {{ 'x' }}{% endfilter %}", {}),
    ("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}|{% raw %}{{ not rendered }} {% if %}{% endraw %}|{# a comment #}done", {}),
    ("line1\n  {% if true %}\n  indented\n  {% endif %}\n  {{ 'var' }}\n{% for i in [1, 2] %}\n    item {{ i }}\n{% endfor %}\nend\n", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c\n  {{- ' d ' -}}  \n e {%+ if true %} f{% endif +%}\n g {#- c -#} h\n  {# own line #}\ni", {}),
    ("{% if true %}\r\nwin\r\n{% endif %}\r\nx\r\n\r\n", {}),
    ("{{ '%s' }} {{ \"a\\u00e9\\x41\\101\\q\\U0001F600\" }} {{ 'multi' 'part' }} {{ 1_000 }} {{ 'q\\'q' }}", {}),
    ("{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }}|{% for i in range(2) %}{{ i }}{% endfor %}", {}),
    ("{{ 42 | string }}{{ '7' | int + 1 }} {{ '3.5' | float }} {{ 'x' | int }} {{ 3.9 | int }} {{ 2 | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(method='ceil') }}", {}),
    ("{{ d | dictsort }} {{ d | dictsort(by='value') }} {{ d | items | list }}", {"d": {"b": 2, "a": 3, "c": 1}}),
    ("{{ text | indent }}|{{ text | indent(2, true) }}|{{ text | indent(first=true, blank=true) }}", {"text": "a\n\nb\nc"}),
    ("{{ '<a href=\"x\">&' | escape }} {{ 'x' | safe }} {{ '<b>' | e }}", {}),
    ("{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%H:%M:%S %A %B') }}", {}),
    ("{{ messages[0]['content'] | trim }}{{ messages[0].content.strip() }}{% set messages = messages[1:] %}{{ messages | length }}",
     {"messages": [{"role": "system", "content": " s "}, {"role": "user", "content": "u"}]}),
    ("{% set ns = namespace(found=false) %}{% for m in ms[::-1] %}{% if not ns.found and m.role == 'user' %}{% set ns.found = true %}{{ loop.index0 }}{% endif %}{% endfor %}",
     {"ms": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}, {"role": "assistant"}]}),
    ("{{ raise_exception('Only user and assistant roles are supported!') }}", {}),
    ("{% if messages[0].role != 'user' %}{{ raise_exception('first message must be user, got ' + messages[0].role) }}{% endif %}ok",
     {"messages": [{"role": "system"}]}),
    ("{{ d['a']['b'] }}|{{ d.a.b }}|{{ xs.0 }}|{{ xs[true] }}", {"d": {"a": {"b": "deep"}}, "xs": ["zero", "one"]}),
    ("{{ [1, 2, 3] | selectattr('x') | list }}{{ {'a': [1, {'b': 'c'}]}['a'][1]['b'] }}{{ ({'k': 'v'}).k }}", {}),
    ("{{ 'Hello' if name is defined else 'Bye' }} {{ (name or 'anon') | upper }} {{ name and 'set' }}", {"name": "x"}),
    ("{%- for m in ms -%}\n  {%- if m.tool_calls is defined and m.tool_calls -%}T{%- elif m.content -%}C{{ m.content | length }}{%- endif -%}\n{%- endfor -%}",
     {"ms": [{"content": "abc"}, {"tool_calls": [1]}, {"tool_calls": []}, {"content": ""}]}),
    ("{{ 'a\\nb' | tojson }} {{ '\\u2028\\x7f\\x01' | tojson }} {{ 1.0 | tojson }} {{ 10000000000000000.0 | tojson }} {{ [1.5, -2, 3e-7] | tojson }} {{ {'a': none, 1: 2} | tojson }}", {}),
    ("{{ 'x'.center(5) if false else 'n' }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.rfind('c') }} {{ 'abcabc'.count('bc') }} {{ '-'.join(['a', 'b']) }} {{ '123'.isdigit() }} {{ 'a b'.isalpha() }} {{ 'é'.find('x') }}",
     {}),
    ("{% set x = [1, 2] %}{% set a, b = x %}{{ b }}{{ a }}{% for (k, v) in [(1, 'a'), (2, 'b')] %}{{ k }}{{ v }}{% endfor %}", {}),
    ("{{ '  leading' }}\n    {% set x = 1 %}\n    {{- x }}\n{%- set y = 2 -%}\n    {{ y }}", {}),
    ("{% generation %}gen {{ 1 }}{% endgeneration %}", {}),
]


def feature_cases(env):
    return [dict(template=t, variables=v, **render(env, t, v)) for t, v in FEATURES]


def dump(path, value):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(value, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    os.environ["TZ"] = "UTC"
    env = environment()
    write_templates()
    dump(os.path.join(HERE, "templates.json"), template_cases(env))
    dump(os.path.join(HERE, "features.json"), {"now": FIXED_NOW.isoformat(), "cases": feature_cases(env)})
    print(f"jinja2 {jinja2.__version__}: {len(TEMPLATES)} templates x {len(CONVERSATIONS)} conversations x 2, "
          f"{len(FEATURES)} features", file=sys.stderr)


if __name__ == "__main__":
    main()
