"""Run options of the cognitive-bias tasks, shared by the harness adapters.

In lm-eval they arrive through `--metadata` (e.g. `--metadata mode=generate seed=7`), merged
with the model arguments, so unknown keys are ignored (near misses are warned about).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from biasmonkey.tasks.cognitive.data import bias_tests
from biasmonkey.tasks.cognitive.prompts import is_reversed
from biasmonkey.tasks.options import OptionsFromMapping

MODES = ("exact", "generate")


@dataclass(frozen=True)
class CognitiveOptions(OptionsFromMapping):
    mode: str = "exact"  # exact: label log-likelihoods; generate: greedy answer read with the paper's regex
    reverse_options: bool = True  # offer the options of a seeded half of the tests in reverse (the paper)
    seed: int = 42  # seeds which tests are reversed
    data_path: str | None = None  # a local CSV/parquet copy of the dataset (else $BIASMONKEY_DATA_DIR or the Hub)
    revision: str | None = None  # Hub revision (default: the pinned data.HUB_REVISION)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"option mode={self.mode!r} is invalid for the cognitive-bias tasks; use one of {', '.join(MODES)}")
        if not isinstance(self.reverse_options, bool):
            raise ValueError(f"option reverse_options={self.reverse_options!r} must be true or false")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"option seed={self.seed!r} must be an integer")
        for name in ("data_path", "revision"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"option {name}={value!r} must be a non-empty string")

    def task_docs(self, bias: str) -> list[dict[str, Any]]:
        """The harness documents of one bias under these options (option order drawn per test)."""
        return [
            test.to_doc(self.reverse_options and is_reversed(test.id, self.seed))
            for test in bias_tests(bias, self.data_path, self.revision)
        ]
