"""A small, safe evaluator for the expressions of template files (derived values, metric params).

Expressions are Python syntax restricted to: literals (numbers, strings, booleans, tuples and
lists of them), names of known values, arithmetic (+ - * / // % **, unary + and -),
comparisons, `and`/`or`/`not`, `x if c else y`, and calls of `round`, `int`, `abs`, `min`,
`max` with positional arguments. Anything else (attributes, subscripts, other calls, lambdas,
comprehensions, …) is refused when the expression is compiled, before any value is sampled.
`round` is Python's: halves go to the even neighbour (round(8.5) == 8, round(9.5) == 10).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any


class ExpressionError(ValueError):
    """An expression is not allowed, refers to an unknown name, or fails when evaluated."""


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
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"{text!r} is not a valid expression ({err.msg})") from None
    _check(tree, names)
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
        return _BINARY[type(node.op)](_eval(node.left, values), _eval(node.right, values))
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
        return FUNCTIONS[node.func.id](*(_eval(arg, values) for arg in node.args))  # type: ignore[attr-defined]
    raise ExpressionError(f"{type(node).__name__} is not allowed")  # unreachable after compile_expression


def evaluate(tree: ast.Expression, values: Mapping[str, Any]) -> Any:
    """The value of a compiled expression; run-time failures (e.g. division by zero) are ExpressionErrors."""
    try:
        return _eval(tree.body, values)
    except ExpressionError:
        raise
    except Exception as err:  # ZeroDivisionError, TypeError, OverflowError, ...
        raise ExpressionError(f"{ast.unparse(tree)!r} failed: {type(err).__name__}: {err}") from None
