"""The JavaScript-literal parser (rackbook.core.jsliteral): every literal it reads, and every
malformed input refused in one line naming the file and line."""

from __future__ import annotations

import pytest

from rackbook.core.jsliteral import parse_js_export
from rackbook.errors import InputError


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("1", 1),
        ("-7", -7),
        ("2.5", 2.5),
        (".5", 0.5),
        ("3.", 3.0),
        ("-2e3", -2000.0),
        ("1E-2", 0.01),
        ("true", True),
        ("false", False),
        ("null", None),
        ("undefined", None),
        ('"double"', "double"),
        ("'single'", "single"),
        (r'"a\"b"', 'a"b'),
        (r"'it\'s'", "it's"),
        (r'"tab\tnew\nline"', "tab\tnew\nline"),
        (r'"back\\slash"', "back\\slash"),
        ('"// not a comment /* nor this */"', "// not a comment /* nor this */"),
        ("[]", []),
        ("{}", {}),
        ("[1, 2, 3,]", [1, 2, 3]),
        ("{a: 1, 'b c': 2, \"d\": 3, $e_1: 4,}", {"a": 1, "b c": 2, "d": 3, "$e_1": 4}),
        ("[{x: [1, {y: null}]}, [[]]]", [{"x": [1, {"y": None}]}, [[]]]),
        ("[1, // one\n 2 /* two */, /* three */ 3]", [1, 2, 3]),
    ],
)
def test_each_literal(literal, value):
    assert parse_js_export(f"export const v = {literal};", "v") == value
    assert type(parse_js_export(f"const v = {literal}", "v")) is type(value)


def test_the_named_export_among_others():
    text = """
    // header remark
    import x from "y";
    export const other = [1];
    let   cells =   /* spaces and a comment */ {n: 2};
    var last = 3
    """
    assert parse_js_export(text, "cells") == {"n": 2}
    assert parse_js_export(text, "last") == 3
    assert parse_js_export(text, "other") == [1]


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("const y = 1", "x", "no `export const x = ...` in the file"),
        ("const x = [\n\n 1,\n 'open\n];", "line 4", "string left open"),
        ("const x = 'never closed", "line 1", "string left open"),
        ("const x = {a: 1 b: 2}", "line 1", "expected ',' or '}' in an object"),
        ("const x = [1 2]", "line 1", "expected ',' or ']' in a list"),
        ("const x = {a: 1,\n a: 2}", "line 2", "duplicate key 'a'"),
        ("const x = {a 1}", "line 1", "expected ':', found '1}'"),
        ("const x = {1: 2}", "line 1", "expected a key"),
        ("const x = [1,\n\n", "line 3", "unexpected end of file"),
        ("const x = ", "line 1", "unexpected end of file"),
        ("const x = [f(1)]", "line 1", "unexpected 'f(1)]'"),
        ("const x = [1, /* open\n\n]", "line 1", "comment left open to the end of the file"),
    ],
)
def test_malformed_input_is_one_line_naming_the_line(text, field, problem):
    with pytest.raises(InputError) as exc:
        parse_js_export(text, "x", "cells.jsx")
    assert str(exc.value) == f"cells.jsx: {field}: {problem}"
