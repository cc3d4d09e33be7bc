"""The docs a newcomer reads: a short README that links into docs/, links that lead somewhere, every
`biasmonkey` command documented in docs/cli.md, and a page for every task family."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.cli import build_parser, family_hooks
from biasmonkey.tasks.families import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 160

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    """The text outside code blocks and code spans, where a link is a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text)  # backticks, asterisks, punctuation (an underscore is a word character)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _relative_links(page: Path) -> Iterator[tuple[str, Path, str]]:
    """(link as written, the file it names, its #anchor or '') for every relative link of a page."""
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, …
            continue
        path, _, anchor = target.partition("#")
        yield target, (page.parent / path).resolve() if path else page, anchor


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the details into docs/"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_somewhere(page: Path):
    broken = []
    for target, path, anchor in _relative_links(page):
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_sees_links():
    """A guard for the test above: it finds the README's links (a broken pattern would find none)."""
    targets = {target for target, _, _ in _relative_links(README)}
    assert "docs/cli.md" in targets and "docs/images/report-first-screen.png" in targets


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every subcommand path of an argparse parser, e.g. ("run",), ("data", "fetch")."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from _commands(sub, (*prefix, name))


def test_every_cli_command_is_in_the_docs():
    commands = set(_commands(build_parser()))
    # The families' own commands come in through the family registry (tasks/<family>/commands.py).
    family_parser = argparse.ArgumentParser()
    family_sub = family_parser.add_subparsers()
    for add_commands in family_hooks("add_commands"):
        add_commands(family_sub)
    family_commands = set(_commands(family_parser))
    assert family_commands and family_commands <= commands
    assert {("run",), ("report",), ("tasks", "list"), ("data", "fetch")} <= commands

    cli_page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [
        " ".join(path)
        for path in sorted(commands)
        if not re.search(rf"\bbiasmonkey {re.escape(' '.join(path))}(?![\w-])", cli_page)
    ]
    assert not missing, f"docs/cli.md does not document: {', '.join('biasmonkey ' + m for m in missing)}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_has_a_page_linked_from_the_readme(family: str):
    page = DOCS / f"{family}.md"
    assert page.is_file(), f"family {family!r} has no page docs/{family}.md"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# "), f"docs/{family}.md should open with a title"
    readme = README.read_text(encoding="utf-8")
    assert f"](docs/{family}.md)" in readme, f"README.md does not link docs/{family}.md"
    assert f"`{family}`" in readme, f"README.md does not name the family `{family}`"
