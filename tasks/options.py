"""Run options: one frozen dataclass per family, read from every place a user can set them.

A family declares its options once, as dataclass fields made with `option(...)` (default, help,
which harnesses use it, how to read it from text, the choices). From that one declaration come:

- lm-eval's `--metadata` parsing (`from_mapping`: lm-eval merges the model arguments into the
  metadata, so unknown keys are ignored, and a near miss of an option gets a did-you-mean warning);
- the Inspect task signature (`inspect_parameters`: the `-T` parameters with their defaults);
- the `biasmonkey run` flags (`add_cli_arguments` / `cli_metadata`).

Values are checked by the dataclass's `__post_init__`, with the helpers below, so a bad value is
an error naming the option wherever it was given.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T", bound="Options")

ALL_HARNESSES = ("lm_eval", "inspect")
# Model arguments that lm-eval merges into every task's metadata: never a misspelt option.
MODEL_ARGUMENTS = frozenset({"pretrained", "model", "dtype", "tokenizer", "base_url", "device", "revision"})
_NO_DEFAULT = object()


def option(
    default: Any,
    help: str,
    *,
    harnesses: Sequence[str] = ALL_HARNESSES,
    parse: Callable[[str], Any] | None = None,
    choices: Sequence[Any] | None = None,
    inspect_default: Any = _NO_DEFAULT,
) -> Any:
    """A run option: a dataclass field with what the readers need to know of it.

    parse: how the command line's text becomes a value (default: by the type of `default`);
    inspect_default: the default of the Inspect `-T` parameter where it differs."""
    meta = {
        "help": help,
        "harnesses": tuple(harnesses),
        "parse": parse,
        "choices": choices,
        "inspect_default": inspect_default,
    }
    return dataclasses.field(default=default, metadata=meta)


def check_choice(name: str, value: Any, choices: Iterable[Any], problem: str = "is invalid") -> None:
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"option {name}={value!r} {problem}; use one of {', '.join(map(str, choices))}")


# numpy's legacy generator (`np.random.seed`, `RandomState`), which the authors' folds use, takes these.
NUMPY_SEED_MAX = 2**32 - 1


def check_int(
    name: str, value: Any, minimum: int | None = None, optional: bool = False, maximum: int | None = None
) -> None:
    if optional and value is None:
        return
    low = minimum is not None and isinstance(value, int) and value < minimum
    high = maximum is not None and isinstance(value, int) and value > maximum
    if not isinstance(value, int) or isinstance(value, bool) or low or high:
        kind = {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer ≥ {minimum}"
        )
        if maximum is not None:
            kind = f"an integer from {minimum} to {maximum:,}" if minimum is not None else f"an integer ≤ {maximum:,}"
        raise ValueError(f"option {name}={value!r} must be {kind}")


def check_numpy_seed(name: str, value: Any) -> None:
    """A seed of numpy's legacy generator: 0 to 2**32 − 1."""
    check_int(name, value, 0, maximum=NUMPY_SEED_MAX)


def check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"option {name}={value!r} must be true or false")


def check_text(name: str, value: Any, optional: bool = True) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value:
        raise ValueError(f"option {name}={value!r} must be a non-empty string")


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


class Options:
    """Base of a family's options dataclass (declare fields with `option(...)`)."""

    # Options that say where inputs lie, not how numbers are computed: they never tell runs apart.
    locations: ClassVar[tuple[str, ...]] = ("data_path",)
    # Of those, the ones naming an input file whose content changes the numbers (a tests file, not an
    # earlier step's outputs): `biasmonkey run` records their digests (harness_ext/run_inputs.py).
    input_files: ClassVar[tuple[str, ...]] = ("data_path",)

    @classmethod
    def of_run(cls: type[T], entry: Any, task: str) -> T:
        """The options a report entry's run of `task` was given (its `sources[task].options`), the
        defaults where the entry does not record them."""
        options = getattr(getattr(entry, "sources", {}).get(task), "options", None)
        return options if isinstance(options, cls) else cls()

    def intermediate(self) -> bool:
        """Whether a run with these options is a step whose outputs feed another run, not results."""
        return False

    @classmethod
    def default_input(cls, name: str) -> Path | None:
        """The file an input-file option reads when it is not given and no pinned sha256 guards it
        (`biasmonkey run` records its digest); None: checksummed data, or nothing to read."""
        return None

    def follow_up(self, outputs: str) -> dict[str, Any]:
        """For an intermediate run: the options to add for the run that reads its `outputs` folder."""
        return {}

    @classmethod
    def option_fields(cls, harness: str | None = None) -> list[dataclasses.Field]:
        found = dataclasses.fields(cls)  # type: ignore[arg-type]
        return [f for f in found if harness is None or harness in f.metadata.get("harnesses", ALL_HARNESSES)]

    @classmethod
    def from_mapping(cls: type[T], values: Mapping[str, Any] | None, harness: str = "lm_eval") -> T:
        """The options among `values` (other keys are ignored; a near miss is warned about).

        An option of the other harness only is ignored with a warning saying so."""
        names = [f.name for f in cls.option_fields()]
        usable = {f.name for f in cls.option_fields(harness)}
        values = dict(values or {})
        for key in values:
            if key in MODEL_ARGUMENTS:  # lm-eval merges the model arguments into the metadata
                continue
            if key in names and key not in usable:
                log.warning("biasmonkey: option %r does not apply to %s and is ignored", key, harness.replace("_", "-"))
            elif key not in names and (close := _near_miss(key, names)):
                log.warning("biasmonkey ignores the unknown option %r; did you mean %r?", key, close)
        return cls(**{k: v for k, v in values.items() if k in usable})

    def non_defaults(self) -> dict[str, Any]:
        """The options set to something other than their default."""
        return {f.name: getattr(self, f.name) for f in self.option_fields() if getattr(self, f.name) != f.default}

    @classmethod
    def inspect_parameters(cls) -> list[inspect.Parameter]:
        """The Inspect `-T` parameters: every option Inspect uses, with its Inspect default."""
        params = []
        for f in cls.option_fields("inspect"):
            default = f.metadata.get("inspect_default", _NO_DEFAULT)
            params.append(
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=f.default if default is _NO_DEFAULT else default,
                    annotation=f.type,
                )
            )
        return params


def _near_miss(key: str, names: Sequence[str]) -> str | None:
    """The option `key` most likely means: the same name in another case (options are lower case,
    with underscores), else a close spelling."""
    folded = key.lower().replace("-", "_")
    if folded in names:
        return folded
    close = difflib.get_close_matches(folded, names, n=1, cutoff=0.85)
    return close[0] if close else None


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parser_for(f: dataclasses.Field) -> Callable[[str], Any]:
    if f.metadata.get("parse") is not None:
        return f.metadata["parse"]
    if isinstance(f.default, bool):
        return parse_bool
    if isinstance(f.default, int):
        return int
    return str


def family_name(cls: type[Options]) -> str:
    """The family an options class belongs to: its folder, `tasks/<family>/options.py`."""
    parts = cls.__module__.split(".")
    return parts[-2] if len(parts) >= 2 and parts[-1] == "options" else cls.__name__


def _shown(value: Any) -> str:
    """A default as a user types it on the command line."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return repr(value) if isinstance(value, str) else str(value)


def _grouped(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Families grouped by what they say (a help text or a default), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for family, said in pairs:
        groups.setdefault(said, []).append(family)
    return groups


def merged_help(declared: Sequence[tuple[str, dataclasses.Field]]) -> str:
    """The help of one flag declared by one or more families, `declared` being (family, field) pairs:
    each family's text (one text where they agree), then which families it applies to and each one's
    default, e.g. "… (yesno, cognitive: default 42; response_bias: default 0)"."""
    texts = _grouped((family, f.metadata["help"]) for family, f in declared)
    if len(texts) == 1:
        text = next(iter(texts))
    else:
        text = " ".join(f"[{', '.join(families)}] {said}" for said, families in texts.items())
    defaults = _grouped((family, "" if f.default is None else f"default {_shown(f.default)}") for family, f in declared)
    scope = "; ".join(
        f"{', '.join(families)}: {said}" if said else ", ".join(families) for said, families in defaults.items()
    )
    return f"{text} ({scope})".replace("%", "%%")  # argparse formats help with %


def _metavar(name: str, parse: Callable[[str], Any]) -> str:
    return "N" if parse is int else name.upper()


def add_cli_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    option_types: Sequence[type[Options]],
    harness: str = "lm_eval",
) -> None:
    """One flag per option of the given families (an option shared by several families, e.g.
    `mode`, is one flag, as it is one `--metadata` key, and its help names each family's text and
    default). Every flag defaults to None, so only the options given on the command line are
    passed on, and each family keeps its defaults."""
    declared: dict[str, list[tuple[str, dataclasses.Field]]] = {}
    for cls in option_types:
        for f in cls.option_fields(harness):
            declared.setdefault(f.name, []).append((family_name(cls), f))
    for name, same_name in declared.items():
        first = same_name[0][1]
        if isinstance(first.default, bool):  # --flag / --no-flag
            parser.add_argument(
                _flag(name),
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=merged_help(same_name),
            )
            continue
        choices = sorted({c for _, f in same_name for c in (f.metadata.get("choices") or ())}, key=str)
        parse = _parser_for(first)
        parser.add_argument(
            _flag(name),
            dest=name,
            type=parse,
            default=None,
            metavar=None if choices else _metavar(name, parse),
            choices=choices or None,
            help=merged_help(same_name),
        )


def cli_metadata(
    args: argparse.Namespace, option_types: Sequence[type[Options]], harness: str = "lm_eval"
) -> dict[str, Any]:
    """The options given on the command line, as a `--metadata` mapping."""
    names = {f.name for cls in option_types for f in cls.option_fields(harness)}
    return {name: getattr(args, name) for name in sorted(names) if getattr(args, name, None) is not None}
