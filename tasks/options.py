"""Run options read from a harness's free-form settings (lm-eval `--metadata`, Inspect `-T`)."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T", bound="OptionsFromMapping")


class OptionsFromMapping:
    """Mixin for a dataclass of run options: build it from a larger mapping.

    lm-eval merges `--metadata` with the model arguments, so keys that are not options are
    ignored, but one that looks like a misspelt option is warned about. Values are validated
    by the dataclass itself (`__post_init__`).
    """

    @classmethod
    def from_mapping(cls: type[T], values: Mapping[str, Any] | None) -> T:
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        values = dict(values or {})
        for key in values:
            if key not in names and (close := difflib.get_close_matches(key, names, n=1, cutoff=0.85)):
                log.warning("biasmonkey ignores the unknown option %r; did you mean %r?", key, close[0])
        return cls(**{k: v for k, v in values.items() if k in names})
