#!/usr/bin/python3
"""Render Jinja2 templates with Debian's python3-jinja2 for the Go jinja package's tests.

Usage: render_jinja.py CASES.json OUT.json
CASES.json: [{"template": str, "vars": {...}, "trim": bool, "lstrip": bool}, ...], rendered in
an ImmutableSandboxedEnvironment with jinja2.ext.loopcontrols (as transformers uses, but with
Jinja's own tojson). OUT.json: one {"out": str} or {"error": class name, "message": str} each.
"""
import json
import sys

import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    envs = {}
    results = []
    for case in cases:
        key = (case["trim"], case["lstrip"])
        if key not in envs:
            envs[key] = ImmutableSandboxedEnvironment(trim_blocks=key[0], lstrip_blocks=key[1],
                                                      extensions=[jinja2.ext.loopcontrols])
        try:
            out = envs[key].from_string(case["template"]).render(**case["vars"])
            results.append({"out": out})
        except Exception as e:
            results.append({"error": type(e).__name__, "message": str(e)})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
