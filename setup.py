"""The packages: every folder with an `__init__.py` under the three top-level folders, installed
under the one `biasmonkey` namespace (tasks → biasmonkey.tasks, …), so that a new family's folder
is packaged without a line here (pyproject.toml holds everything else)."""

from pathlib import Path

from setuptools import setup

ROOTS = {"biasmonkey.tasks": "tasks", "biasmonkey.metrics": "metrics", "biasmonkey.harness_ext": "harness_ext"}


def packages() -> list[str]:
    here = Path(__file__).parent
    return [
        ".".join([name, *init.parent.relative_to(here / folder).parts])
        for name, folder in ROOTS.items()
        for init in sorted((here / folder).rglob("__init__.py"))
    ]


setup(packages=packages(), package_dir=ROOTS)
