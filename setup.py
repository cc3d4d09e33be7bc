"""The packages: every folder with an `__init__.py` under the three top-level folders, and every
folder of package data (templates) beside them, installed under the one `biasmonkey` namespace
(tasks → biasmonkey.tasks, …), so that a new family's folder is packaged without a line here
(pyproject.toml holds everything else). Listing the data folders too keeps setuptools from warning
that it would ignore them."""

from pathlib import Path

from setuptools import setup

ROOTS = {"biasmonkey.tasks": "tasks", "biasmonkey.metrics": "metrics", "biasmonkey.harness_ext": "harness_ext"}


def is_package(folder: Path) -> bool:
    """A folder with code (`__init__.py`) or with package data (a file that is not bytecode)."""
    return folder.name != "__pycache__" and any(f.is_file() and f.suffix != ".pyc" for f in folder.iterdir())


def packages() -> list[str]:
    here = Path(__file__).parent
    return [
        ".".join([name, *sub.relative_to(here / folder).parts])
        for name, folder in ROOTS.items()
        for sub in sorted([here / folder, *(here / folder).rglob("*")])
        if sub.is_dir() and "__pycache__" not in sub.parts and is_package(sub)
    ]


setup(packages=packages(), package_dir=ROOTS)
