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
        ("{Xa: 1, X: 2}", {"Xa": 1, "X": 2}),  # a bare key is not a quote
        ("[1, // c\n2]", [1, 2]),  # a line comment ends at its newline, no further
        ("[1, /**/ 2, /*/ c */ 3]", [1, 2, 3]),  # a block comment's "*/" after its "/*"
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
        # the file ends inside a string, at an escape: at its last byte or its last but one
        ("const x = 'ab\\", "line 1", "string left open"),
        ('const x = "a\\"', "line 1", "string left open"),
        ("const x = {", "line 1", "expected a key"),  # the file ends where a key goes
        ("\nconst x = [f(1)]", "line 2", "unexpected 'f(1)]'"),  # a newline at byte 0 counts
        ("const x = [1, // c", "line 1", "unexpected end of file"),  # a comment to the end
        ("const x = [Xa]", "line 1", "unexpected 'Xa]'"),  # a bare word is no string
        ("const x = [f(1), 2, 3, 4]", "line 1", "unexpected 'f(1), 2, 3, '"),  # 12 characters
        ("const x = {a 123456789012345}", "line 1", "expected ':', found '123456789012'"),
        ("const x = {a", "line 1", "expected ':', found 'end of file'"),
    ],
)
def test_malformed_input_is_one_line_naming_the_line(text, field, problem):
    with pytest.raises(InputError) as exc:
        parse_js_export(text, "x", "cells.jsx")
    assert str(exc.value) == f"cells.jsx: {field}: {problem}"


def test_comments_after_an_earlier_newline():
    """A line comment is searched from where it starts, not from the file's first newline."""
    text = "// head\nexport const x = [1, // one\n 2,\n 3];"
    assert parse_js_export(text, "x") == [1, 2, 3]


def test_an_error_without_a_file_names_text():
    with pytest.raises(InputError) as exc:
        parse_js_export("const y = 1", "x")
    assert str(exc.value) == "<text>: x: no `export const x = ...` in the file"
