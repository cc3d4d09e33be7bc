"""The wrapped multiple-choice family's command-line options."""

from __future__ import annotations

import argparse

import pytest

from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.options import add_cli_arguments


def test_a_pride_share_that_is_no_number_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_cli_arguments(parser, [PositionOptions])
    assert parser.parse_args(["--pride-share", "0.1"]).pride_share == 0.1
    with pytest.raises(SystemExit):
        parser.parse_args(["--pride-share", "abc"])
    err = capsys.readouterr().err
    assert "argument --pride-share: pride_share must be a number in (0, 1), e.g. 0.05 (the paper's); got 'abc'" in err
    assert "_share" not in err.replace("pride_share", "").replace("pride-share", "")
