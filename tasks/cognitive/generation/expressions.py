"""A small, safe evaluator for the expressions of template files (derived values, metric params).

Expressions are Python syntax restricted to: literals (numbers, strings, booleans, tuples and
lists of them), names of known values, arithmetic (+ - * / // % **, unary + and -),
comparisons, `and`/`or`/`not`, `x if c else y`, and calls of `round`, `int`, `abs`, `min`,
`max` with positional arguments. Anything else (attributes, subscripts, other calls, lambdas,
comprehensions, …) is refused when the expression is compiled, before any value is sampled.
`round` is Python's: halves go to the even neighbour (round(8.5) == 8, round(9.5) == 10).

Expressions are bounded, so a template cannot hang or exhaust memory: at most MAX_CHARS
characters and MAX_DEPTH levels of nesting; integers of at most MAX_INT_BITS bits (a power is
refused before it is computed), finite floats, strings, tuples and lists of at most MAX_LENGTH
items (a repetition is refused before it is computed), round() to at most MAX_ROUND_DIGITS digits,
and no %-formatting of strings. Each refusal is an ExpressionError naming the expression and limit.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any


class ExpressionError(ValueError):
    """An expression is not allowed, refers to an unknown name, or fails when evaluated."""


class _TooBig(Exception):
    """A value would pass a limit; evaluate() turns it into an ExpressionError naming the expression."""


MAX_CHARS = 1000  # characters of an expression
MAX_DEPTH = 32  # levels of nesting of its syntax tree
MAX_INT_BITS = 1024  # bits of an integer (about 308 decimal digits: int() of any float fits)
MAX_LENGTH = 10_000  # characters of a string, items of a tuple or list
MAX_ROUND_DIGITS = 400  # |ndigits| of round(x, ndigits)


FUNCTIONS: dict[str, Callable[..., Any]] = {"round": round, "int": int, "abs": abs, "min": min, "max": max}

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _bounded(value: Any) -> Any:
    """`value` if it keeps within the limits on numbers and lengths, else _TooBig."""
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _TooBig(f"an integer of {value.bit_length()} bits; integers are limited to {MAX_INT_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise _TooBig(f"the float {value}; floats must stay finite (integers are limited to {MAX_INT_BITS} bits)")
    if isinstance(value, (str, tuple, list)) and len(value) > MAX_LENGTH:
        raise _TooBig(f"a {type(value).__name__} of length {len(value)}; lengths are limited to {MAX_LENGTH}")
    return value


def _binary(op: ast.operator, left: Any, right: Any) -> Any:
    """left <op> right, refused before it is computed where the result could be huge."""
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        # the result's size, without computing it (an exponent of over 64 bits is huge anyway)
        bits = right * math.log2(abs(left)) if right.bit_length() <= 64 else math.inf
        if bits > MAX_INT_BITS:
            raise _TooBig(f"{left} ** {right} has about {bits:.3g} bits; integers are limited to {MAX_INT_BITS} bits")
    if isinstance(op, ast.Mult):  # repetition of a sequence by an int (either way round)
        seq, times = (left, right) if isinstance(left, (str, tuple, list)) else (right, left)
        if isinstance(seq, (str, tuple, list)) and isinstance(times, int) and len(seq) * times > MAX_LENGTH:
            raise _TooBig(
                f"repeating a {type(seq).__name__} of length {len(seq)} {times} times; lengths are limited to {MAX_LENGTH}"
            )
    if isinstance(op, ast.Mod) and isinstance(left, str):
        raise _TooBig("%-formatting of strings is not allowed")
    try:
        return _bounded(_BINARY[type(op)](left, right))
    except OverflowError:  # e.g. 10.0 ** 400, or an int too large to divide as a float
        raise _TooBig("the result overflows a float; floats must stay finite") from None


def _call(name: str, args: list[Any]) -> Any:
    if name == "round" and len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_ROUND_DIGITS:
        raise _TooBig(f"round() to {args[1]} digits; at most {MAX_ROUND_DIGITS} digits either way")
    return _bounded(FUNCTIONS[name](*args))


def _depth(tree: ast.AST) -> int:
    """Levels of nesting of a syntax tree (iterative: a deep tree must not exhaust the stack)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _check(node: ast.AST, names: Collection[str]) -> None:
    """Raise ExpressionError unless every node of the tree is one the evaluator allows."""
    if isinstance(node, ast.Expression):
        _check(node.body, names)
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, (int, float, str, bool)):
            raise ExpressionError(f"literal {node.value!r} is not a number, string or boolean")
    elif isinstance(node, ast.Name):
        if node.id not in names:
            raise ExpressionError(f"unknown name {node.id!r} (known: {', '.join(sorted(names)) or 'none'})")
    elif isinstance(node, (ast.Tuple, ast.List)):
        for item in node.elts:
            _check(item, names)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, names)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            _check(value, names)
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        for part in (node.left, *node.comparators):
            _check(part, names)
    elif isinstance(node, ast.IfExp):
        for part in (node.test, node.body, node.orelse):
            _check(part, names)
    elif isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
            raise ExpressionError(f"only calls of {', '.join(FUNCTIONS)} are allowed, not {ast.unparse(node.func)!r}")
        if node.keywords:
            raise ExpressionError(f"{node.func.id}() takes positional arguments only")
        for arg in node.args:
            _check(arg, names)
    else:
        raise ExpressionError(f"{ast.unparse(node)!r} ({type(node).__name__}) is not allowed in an expression")


def compile_expression(text: str, names: Collection[str]) -> ast.Expression:
    """Parse and check an expression that may use `names`; errors say what is wrong."""
    text = text.strip()
    if len(text) > MAX_CHARS:
        raise ExpressionError(f"{text[:40]!r}… has {len(text)} characters; expressions are limited to {MAX_CHARS}")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError) as err:  # ValueError: e.g. a null byte
        raise ExpressionError(f"{text!r} is not a valid expression ({getattr(err, 'msg', err)})") from None
    except (RecursionError, MemoryError):  # the parser's own nesting limits
        raise ExpressionError(f"{text[:40]!r}… is nested too deeply (at most {MAX_DEPTH} levels)") from None
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        raise ExpressionError(f"{text[:40]!r} is nested {depth} levels deep; expressions are limited to {MAX_DEPTH}")
    _check(tree, names)
    try:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                _bounded(node.value)
    except _TooBig as err:
        raise ExpressionError(f"{text[:40]!r} is refused: a literal is {err}") from None
    return tree


def _eval(node: ast.AST, values: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_eval(item, values) for item in node.elts)
    if isinstance(node, ast.List):
        return [_eval(item, values) for item in node.elts]
    if isinstance(node, ast.BinOp):
        return _binary(node.op, _eval(node.left, values), _eval(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, values))
    if isinstance(node, ast.BoolOp):  # short-circuit, returning the deciding operand as Python does
        result = None
        for value in node.values:
            result = _eval(value, values)
            if bool(result) == isinstance(node.op, ast.Or):
                break
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, values) else node.orelse, values)
    if isinstance(node, ast.Call):
        return _call(node.func.id, [_eval(arg, values) for arg in node.args])  # type: ignore[attr-defined]
    raise ExpressionError(f"{type(node).__name__} is not allowed")  # unreachable after compile_expression


def evaluate(tree: ast.Expression, values: Mapping[str, Any]) -> Any:
    """The value of a compiled expression; run-time failures (e.g. division by zero) are ExpressionErrors."""
    try:
        return _eval(tree.body, values)
    except ExpressionError:
        raise
    except _TooBig as err:
        raise ExpressionError(f"{ast.unparse(tree)!r} is refused: {err}") from None
    except Exception as err:  # ZeroDivisionError, TypeError, OverflowError, ...
        raise ExpressionError(f"{ast.unparse(tree)!r} failed: {type(err).__name__}: {err}") from None
