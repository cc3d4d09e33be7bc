"""Template expressions are bounded: what would hang or exhaust memory is refused, fast, with an
ExpressionError naming the expression and the limit; ordinary expressions are unchanged."""

from __future__ import annotations

import pytest

from biasmonkey.tasks.cognitive.generation.expressions import (
    MAX_CHARS,
    MAX_DEPTH,
    ExpressionError,
    compile_expression,
    evaluate,
)

VALUES = {"anchor": 85, "big": 10**6, "text": "abc"}


def value_of(text: str) -> object:
    return evaluate(compile_expression(text, VALUES), VALUES)


@pytest.mark.timeout(5, method="thread")  # thread: a runaway computation in C ignores signals
@pytest.mark.parametrize(
    ("text", "shown", "limit"),
    [
        ("9**9**9**9", "9 ** 9 ** 9 ** 9", "integers are limited to 1024 bits"),
        ("2 ** 1025", "2 ** 1025", "integers are limited to 1024 bits"),
        ("big ** big", "big ** big", "integers are limited to 1024 bits"),
        ("(-3) ** 10 ** 18", "(-3) ** 10 ** 18", "integers are limited to 1024 bits"),
        ("2 ** 1000 * 2 ** 1000", "2 ** 1000 * 2 ** 1000", "integers are limited to 1024 bits"),
        ("int('" + "9" * 400 + "')", "int('999", "integers are limited to 1024 bits"),
        ("10.0 ** 400", "10.0 ** 400", "floats must stay finite"),
        ("1e308 * 10", "1e+308 * 10", "floats must stay finite"),
        ("2 ** 1024 / 1", "2 ** 1024 / 1", "integers are limited to 1024 bits"),
        ("'a' * 10 ** 9", "'a' * 10 ** 9", "lengths are limited to 10000"),
        ("10 ** 9 * text", "10 ** 9 * text", "lengths are limited to 10000"),
        ("[0] * 10 ** 9", "[0] * 10 ** 9", "lengths are limited to 10000"),
        ("(1, 2) * 10 ** 18", "(1, 2) * 10 ** 18", "lengths are limited to 10000"),
        ("'a' * 6000 + 'b' * 6000", "'a' * 6000 + 'b' * 6000", "lengths are limited to 10000"),
        ("'%0999999999d' % 1", "'%0999999999d' % 1", "%-formatting of strings is not allowed"),
        ("round(anchor, -10 ** 9)", "round(anchor, -10 ** 9)", "at most 400 digits"),
    ],
)
def test_huge_results_are_refused_before_they_are_computed(text: str, shown: str, limit: str) -> None:
    tree = compile_expression(text, VALUES)  # these are valid expressions: refused when evaluated
    with pytest.raises(ExpressionError) as err:
        evaluate(tree, VALUES)
    assert repr(shown)[:-1] in str(err.value) and limit in str(err.value)


@pytest.mark.timeout(5, method="thread")
@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("-" * 40 + "anchor", f"expressions are limited to {MAX_DEPTH}"),
        ("1" + " + 1" * 100, f"expressions are limited to {MAX_DEPTH}"),
        ("min(" * 40 + "1" + ")" * 40, f"expressions are limited to {MAX_DEPTH}"),
        ("not " * 300 + "1", f"expressions are limited to {MAX_CHARS}"),  # too long, before parsing
        ("-" * 100_000 + "1", f"expressions are limited to {MAX_CHARS}"),
        ("1e999", "floats must stay finite"),  # an infinite literal
        ("1" * 400, "integers are limited to 1024 bits"),
    ],
)
def test_deep_long_or_huge_expressions_are_refused_when_compiled(text: str, limit: str) -> None:
    with pytest.raises(ExpressionError, match=limit) as err:
        compile_expression(text, VALUES)
    assert repr(text[:10])[:-1] in str(err.value)  # names the expression


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2 ** 1023", 2**1023),  # the largest powers of two that fit
        ("2 ** 1023 - 1 + 2 ** 1023", 2**1024 - 1),
        ("10 ** 308", 10**308),
        ("int(1.7e308)", int(1.7e308)),
        ("2 ** -2000", 0.0),
        ("'ab' * 5000", "ab" * 5000),
        ("(0,) * 10000 == (0,) * 10000", True),
        ("round(anchor, -400)", 0),
        ("round(anchor / 7, 2)", 12.14),
        ("1" + " + 1" * 20, 21),
        ("text * 3 + 'd'", "abcabcabcd"),
        ("1.5 ** 10", 57.6650390625),
    ],
)
def test_expressions_within_the_limits_keep_their_values(text: str, expected: object) -> None:
    assert value_of(text) == expected
