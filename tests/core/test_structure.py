"""The layout rule: every per-family fact lives with the family (`tasks/<family>/`), and
`harness_ext/` reads it through the family registry. The per-family harness adapters live with
their family too (`tasks/<family>/lm_eval_task.py`, `inspect_task.py`), and so do their report
parts (`tasks/<family>/report.py`): no module of `harness_ext/` names a family."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from biasmonkey.tasks.families import FAMILIES

HARNESS_EXT = Path(__file__).resolve().parents[2] / "harness_ext"
IDENTIFIER = re.compile(r"[\w.\-/*]+")  # a string that names something (not prose)


def _families_named(path: Path) -> set[str]:
    """The families that a module's identifiers, imports and name-like strings name (docstrings,
    comments and prose messages are not code)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            words = [node.name]
        elif isinstance(node, ast.ImportFrom):
            words = [node.module or "", *(a.name for a in node.names)]
        elif isinstance(node, ast.Import):
            words = [a.name for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words = [node.value] if IDENTIFIER.fullmatch(node.value) else []
        else:
            continue
        found |= {name for name in FAMILIES for word in words if name in word.lower()}
    return found


def test_harness_ext_names_no_family() -> None:
    found = {
        str(path.relative_to(HARNESS_EXT)): names
        for path in sorted(HARNESS_EXT.rglob("*.py"))
        if (names := _families_named(path))
    }
    assert not found, "family names in harness_ext/: move these facts into tasks/<family>/"


@pytest.mark.parametrize("family", FAMILIES.values(), ids=list(FAMILIES))
def test_family_declares_its_facts(family) -> None:
    assert (family.suite or not family.tasks) and family.unit and family.signed_metric and family.hub_metric
    assert family.hub_metric == f"abs_{family.signed_metric}"
    if family.adjusted_p:
        assert family.adjusted_p.startswith(family.signed_metric) and family.name in family.tested
