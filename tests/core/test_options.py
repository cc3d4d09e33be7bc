"""Run options (lm-eval --metadata) are validated with messages naming the option; the `biasmonkey run`
flags say which families each applies to, with each one's default."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from biasmonkey.tasks.families import FAMILIES
from biasmonkey.tasks.options import Options, add_cli_arguments, cli_metadata, option
from biasmonkey.tasks.response_bias.options import RunOptions


def test_defaults_are_the_published_protocol_in_exact_mode() -> None:
    opts = RunOptions.from_mapping(None)
    assert (opts.mode, opts.n_samples, opts.perturbation_seed, opts.allow_forbid_all) == ("exact", 50, None, False)


def test_unrelated_keys_are_ignored() -> None:
    # lm-eval merges the model arguments into the metadata it hands to tasks.
    opts = RunOptions.from_mapping({"pretrained": "/models/x", "dtype": "float32", "mode": "sample", "n_samples": 5})
    assert (opts.mode, opts.n_samples) == ("sample", 5)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"mode": "greedy"}, "mode='greedy' is invalid"),
        ({"n_samples": 0}, "n_samples=0 must be a positive integer"),
        ({"n_samples": "50"}, "n_samples='50' must be a positive integer"),
        ({"n_samples": True}, "n_samples=True must be a positive integer"),
        ({"perturbation_seed": "x"}, "perturbation_seed='x' must be an integer"),
        ({"allow_forbid_all": "yes"}, "allow_forbid_all='yes' must be true or false"),
        ({"perturbation_rules": "loose"}, "perturbation_rules='loose' is unknown; use one of paper, published"),
        ({"template": "chatty"}, "template='chatty' is unknown"),
    ],
)
def test_bad_values_are_rejected_by_name(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        RunOptions.from_mapping(values)


def test_a_misspelt_option_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    opts = RunOptions.from_mapping({"n_sample": 5, "pretrained": "x"})
    assert opts.n_samples == 50
    assert "unknown option 'n_sample'; did you mean 'n_samples'?" in caplog.text
    assert "pretrained" not in caplog.text


@pytest.mark.parametrize("key", ["N_SAMPLES", "N_Samples", "n-samples", "Mode"])
def test_an_option_in_another_case_is_warned_about(key: str, caplog: pytest.LogCaptureFixture) -> None:
    opts = RunOptions.from_mapping({key: 5})
    assert opts == RunOptions()  # (ignored: lm-eval passes model arguments of any case through)
    assert f"unknown option {key!r}; did you mean {key.lower().replace('-', '_')!r}?" in caplog.text


# ---------------------------------------------------------------------------- the command-line flags


@dataclass(frozen=True)
class Sampled(Options):
    seed: int = option(42, "seed of the sampled draws")
    draws: int = option(5, "draws per question")


@dataclass(frozen=True)
class Exact(Options):
    seed: int = option(0, "seed of the sampled draws")
    label: str = option("A", "the first label")


def _help(option_types: list[type[Options]]) -> dict[str, str]:
    """Each flag's help as `add_cli_arguments` declares it."""
    parser = argparse.ArgumentParser()
    add_cli_arguments(parser, option_types)
    return {a.dest: a.help for a in parser._actions if a.dest != "help"}


def test_a_shared_option_is_one_flag_naming_each_familys_default() -> None:
    helps = _help([Sampled, Exact])
    assert helps["seed"] == "seed of the sampled draws (Sampled: default 42; Exact: default 0)"
    assert helps["draws"] == "draws per question (Sampled: default 5)"
    assert helps["label"] == "the first label (Exact: default 'A')"
    args = argparse.ArgumentParser()
    add_cli_arguments(args, [Sampled, Exact])
    assert cli_metadata(args.parse_args(["--seed", "7"]), [Sampled, Exact]) == {"seed": 7}


def test_the_run_flags_name_the_families_they_apply_to() -> None:
    helps = _help([family.options_type for family in FAMILIES.values()])
    assert helps["seed"].endswith("(yesno, cognitive, answer_position, mc_position: default 42)")
    for family in ("yesno", "cognitive", "answer_position", "mc_position"):  # each family's own text, labelled
        assert f"[{family}] " in helps["seed"]
    assert helps["mode"].startswith("[response_bias] exact: option log-probabilities")
    assert helps["mode"].endswith("(response_bias, cognitive: default 'exact')")
    assert helps["n_samples"].endswith("(response_bias: default 50)")
    assert helps["data_path"].endswith("(cognitive)")  # no default to state
    assert all(" | " not in text for text in helps.values())


@pytest.mark.parametrize("family", ["yesno", "answer_position", "mc_position"])
def test_a_seed_outside_numpy_s_range_is_refused_by_name(family: str) -> None:
    """np.random.seed / RandomState take 0 … 2**32 − 1; a larger seed failed after the model had run."""
    from biasmonkey.tasks.families import FAMILIES

    options = FAMILIES[family].options_type
    assert options.from_mapping({"seed": 2**32 - 1}).seed == 4_294_967_295
    for bad in (2**32, 2**40, -1):
        with pytest.raises(ValueError, match=rf"option seed={bad} must be an integer from 0 to 4,294,967,295"):
            options.from_mapping({"seed": bad})
