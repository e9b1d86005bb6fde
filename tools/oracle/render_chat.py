#!/usr/bin/python3
"""Render chat templates as transformers' apply_chat_template(tokenize=False) does.

Mirror of transformers' chat_template_utils._compile_jinja_template and render_jinja_template
(ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the AssistantTracker
{% generation %} tag and jinja2.ext.loopcontrols; tojson = json.dumps(ensure_ascii=False);
raise_exception; strftime_now), with Debian's python3-jinja2.

Usage: render_chat.py CASES.json OUT.json
CASES.json: {"now": [Y, M, D, h, m, s, us], "cases": [{"template": str, "messages": [...],
"tools": ..., "documents": ..., "add_generation_prompt": bool, "special_tokens": {...},
"kwargs": {...}}, ...]}. OUT.json: one {"out": str} or {"error": class name, "message": str}
per case. strftime_now is pinned to "now" so that both renderers see the same clock.
"""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(jinja2.ext.Extension):
    # transformers' {% generation %} tag: renders its body unchanged unless tracking masks.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    spec = json.load(open(sys.argv[1], encoding="utf-8"))
    env = make_env(datetime(*spec["now"]))
    compiled = {}
    results = []
    for case in spec["cases"]:
        try:
            src = case["template"]
            if src not in compiled:
                try:
                    compiled[src] = env.from_string(src)
                except Exception as e:  # keep the syntax error for every case of this template
                    compiled[src] = e
            t = compiled[src]
            if isinstance(t, Exception):
                raise t
            kwargs = dict(case.get("special_tokens") or {})
            kwargs.update(case.get("kwargs") or {})
            out = t.render(messages=case["messages"], tools=case.get("tools"),
                           documents=case.get("documents"),
                           add_generation_prompt=case["add_generation_prompt"], **kwargs)
            results.append({"out": out})
        except Exception as e:
            results.append({"error": type(e).__name__, "message": str(e)})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
