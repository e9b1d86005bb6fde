// Package jinja is a Jinja2 template interpreter that renders chat templates byte for byte as
// Python's jinja2 3.1 does inside Hugging Face transformers.
//
// It implements the language chat templates use: {{ }}, {% %} and {# #} with whitespace
// control and Jinja2's trim_blocks/lstrip_blocks lexing; if, for (else, loop variable, tuple
// unpacking, inline filter, recursive), set (including block set and namespace attributes),
// macro and call, filter blocks, with, raw, break and continue; Python expression semantics
// (int/float arithmetic, string and list operators, comparison chains, slicing, str/dict/list
// methods, str() and repr() printing); Jinja's default Undefined; the built-in filters, tests
// and globals; and the restrictions of ImmutableSandboxedEnvironment. Autoescaping is off, as
// in transformers.
//
// Parse once with Environment.Parse and render many times with Template.Render. Errors are
// *Error values naming the Python exception Jinja2 would raise; a template never makes the
// renderer panic, and size, iteration and recursion limits bound its cost.
package jinja
