"""Run options (lm-eval --metadata) are validated with messages naming the option."""

from __future__ import annotations

import pytest

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
