"""Virtual sampling (metrics/virtual_sampling.py), the valid masses of exact-mode records and the
run options that switch it on. Harness runs are in test_virtual_sampling_harness.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasmonkey.metrics.virtual_sampling import (
    draw_counts,
    expected_draws,
    mean_invalid_mass,
    pair_virtual_values,
    side_generator,
    virtual_counts,
    virtual_delta,
    virtual_statistics,
)
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.scoring import PairRecord, score_exact, score_samples

# response order: q' offers q's three options reversed
DOC = {
    "key": "K1",
    "bias": "response_order",
    "setting": "bias",
    "q_letters": list("ABC"),
    "qp_letters": list("ABC"),
    "qp_positions": [2, 1, 0],
}


def record(
    p_q: list[float], p_qp: list[float], mass_q: float | None = 0.5, mass_qp: float | None = 0.25, key: str = "K1"
) -> PairRecord:
    return PairRecord(
        key,
        "response_order",
        "bias",
        p_q,
        p_qp,
        None,
        None,
        None,
        valid_mass_q=mass_q,
        valid_mass_qp=mass_qp,
        qp_positions=[2, 1, 0],
    )


def test_degenerate_distribution_puts_every_draw_on_its_option() -> None:
    # p = (1, 0): all N answers must be option 0, whatever the seed
    for seed in range(5):
        assert draw_counts([1.0, 0.0], 50, seed, "x").tolist() == [50, 0]
    # p = (0, 0, 1): all on option 2 (zero-probability options are never drawn)
    assert draw_counts([0.0, 0.0, 1.0], 7, 3, "x").tolist() == [0, 0, 7]


def test_degenerate_pair_gives_the_hand_computed_delta() -> None:
    # Δ = 100 (q[a] − q'[a]). q always answers a; q' (reversed) always answers its C = original a
    # → Δ = 100 (1 − 1) = 0
    assert virtual_delta(record([1, 0, 0], [0, 0, 1]), 50, 0) == 0.0
    # q' always answers its A = original c → q'[a] = 0 → Δ = 100 (1 − 0) = +100
    assert virtual_delta(record([1, 0, 0], [1, 0, 0]), 50, 0) == 100.0


def test_draws_are_deterministic_sum_to_n_and_depend_on_seed_and_side() -> None:
    p = [0.2, 0.5, 0.3]
    first = draw_counts(p, 50, 11, "response_order:bias:K1:q")
    assert first.sum() == 50 and first.dtype.kind == "i"
    assert draw_counts(p, 50, 11, "response_order:bias:K1:q").tolist() == first.tolist()
    # 20 other seeds / another side: the counts are not all equal to the first draw
    assert any(draw_counts(p, 50, s, "response_order:bias:K1:q").tolist() != first.tolist() for s in range(12, 32))
    rec = record(p, p)
    q, qp = virtual_counts(rec, 50, 11)
    assert q.tolist() == first.tolist()  # the q side's stream is labelled bias:setting:key:q
    assert virtual_counts(rec, 50, 11)[1].tolist() == qp.tolist()
    assert any(virtual_counts(record(p, p, key=f"K{i}"), 50, 11)[1].tolist() != q.tolist() for i in range(2, 12))


def test_stream_is_the_sha256_seeded_pcg64() -> None:
    # The first raw word of the stream: PCG64 seeded with the first 16 bytes of sha256("5:lab").
    import hashlib

    seed = int.from_bytes(hashlib.sha256(b"5:lab").digest()[:16], "big")
    expected = np.random.PCG64(seed).random_raw(1)
    assert side_generator(5, "lab").bit_generator.random_raw(1).tolist() == expected.tolist()


def test_mean_virtual_delta_converges_to_the_exact_delta() -> None:
    # p_q = (.5, .3, .2), p_q' = (.1, .3, .6) reversed → q'[a] = .6.  Exact Δ = 100 (q[a] − q'[a]) = −10.
    # One draw: Var(Δ) = 100² (.5·.5/50 + .6·.4/50) = 10⁴ · .0098 = 98 → sd ≈ 9.90.
    # Mean of 400 seeds: sd = 9.90 / 20 ≈ 0.495; tolerance 4 sd ≈ 1.98 points.
    rec = record([0.5, 0.3, 0.2], [0.1, 0.3, 0.6])
    deltas = [virtual_delta(rec, 50, seed) for seed in range(400)]
    assert np.mean(deltas) == pytest.approx(-10.0, abs=4 * math.sqrt(98 / 400))
    # and the spread of single draws is the multinomial one (sd 9.90; within 15% over 400 draws)
    assert np.std(deltas, ddof=1) == pytest.approx(math.sqrt(98), rel=0.15)


def test_option_frequencies_converge_to_p() -> None:
    # 20 000 draws of p = (.7, .2, .1): each share's sd ≤ sqrt(.25 / 20000) ≈ .0035; tolerance .015
    counts = draw_counts([0.7, 0.2, 0.1], 20000, 1, "freq")
    assert counts / 20000 == pytest.approx([0.7, 0.2, 0.1], abs=0.015)


def test_invalid_mass_and_expected_draws_by_hand() -> None:
    rec = record([0.5, 0.3, 0.2], [0.1, 0.3, 0.6], mass_q=0.5, mass_qp=0.25)
    # invalid: (1 − .5 + 1 − .25) / 2 = .625; draws for 50 valid: (50/.5 + 50/.25) / 2 = (100 + 200) / 2 = 150
    assert mean_invalid_mass(rec) == pytest.approx(0.625)
    assert expected_draws(rec, 50) == pytest.approx(150.0)
    values = pair_virtual_values(rec, 50, 3)
    assert values["invalid_mass"] == pytest.approx(0.625) and values["virtual_expected_draws"] == pytest.approx(150.0)
    assert values["virtual_delta"] == virtual_delta(rec, 50, 3)
    # a record without valid masses (sample mode, older logs): no number, never a made-up one
    assert mean_invalid_mass(record([1, 0, 0], [1, 0, 0], None, None)) is None
    assert math.isnan(pair_virtual_values(record([1, 0, 0], [1, 0, 0], None, None), 5, 0)["invalid_mass"])
    with pytest.raises(ValueError, match="pair K1: valid mass of qp is 1.5"):
        mean_invalid_mass(record([1, 0, 0], [1, 0, 0], 0.5, 1.5))


def test_score_exact_records_the_valid_mass() -> None:
    # q option log-probs log .2, log .1, log .1 → valid mass .4, p_q = (.5, .25, .25)
    # q' log .05 each → valid mass .15
    rec = score_exact(DOC, np.log([0.2, 0.1, 0.1]), np.log([0.05, 0.05, 0.05]))
    assert rec.valid_mass_q == pytest.approx(0.4, abs=1e-12)
    assert rec.valid_mass_qp == pytest.approx(0.15, abs=1e-12)
    assert rec.p_q == pytest.approx([0.5, 0.25, 0.25]) and rec.qp_positions == [2, 1, 0]
    # sample mode has no valid mass (its invalid answers are counted instead)
    sampled = score_samples(DOC, ["A", "B"], ["C", "x"])
    assert (sampled.valid_mass_q, sampled.valid_mass_qp, sampled.n_invalid) == (None, None, 1)


def test_virtual_statistics_of_a_task() -> None:
    # Two degenerate pairs with hand-known virtual Δ (0 and +100, see above) and one sample-mode
    # pair without distributions on q': Δ mean 50, n 2, one pair left out and counted.
    recs = [
        record([1, 0, 0], [0, 0, 1], 0.5, 0.5, key="A1"),
        record([1, 0, 0], [1, 0, 0], 1.0, 0.25, key="A2"),
        PairRecord("A3", "response_order", "bias", [1, 0, 0], None, None, None, None, qp_positions=[2, 1, 0]),
    ]
    stats = virtual_statistics(recs, 20, 0)
    assert (stats.delta.n, stats.delta.mean, stats.pairs_without_distribution) == (2, 50.0, 1)
    # stderr = sd(0, 100) / √2 = 70.71 / 1.414 = 50; t = 50 / 50 = 1
    assert stats.delta.stderr == pytest.approx(50.0) and stats.delta.t == pytest.approx(1.0)
    # invalid mass: A1 (.5 + .5)/2 = .5, A2 (0 + .75)/2 = .375 → mean .4375; A3 has none (counted)
    assert stats.invalid_mass == pytest.approx(0.4375) and stats.pairs_without_valid_mass == 1
    # draws for 20: A1 (40 + 40)/2 = 40, A2 (20 + 80)/2 = 50 → 45
    assert stats.expected_draws == pytest.approx(45.0)


def test_bad_distributions_and_counts_are_errors() -> None:
    with pytest.raises(ValueError, match="lab: not a probability distribution"):
        draw_counts([0.5, 0.6], 10, 0, "lab")
    with pytest.raises(ValueError, match="virtual samples must be a positive integer"):
        draw_counts([0.5, 0.5], 0, 0, "lab")
    with pytest.raises(ValueError, match="pair K1: virtual sampling needs both answer distributions"):
        virtual_delta(record([1, 0, 0], None), 5, 0)  # type: ignore[arg-type]


def test_run_options_validate_virtual_sampling() -> None:
    opts = RunOptions.from_mapping({"virtual_samples": 50, "virtual_seed": 3})
    assert (opts.virtual_samples, opts.virtual_seed) == (50, 3)
    assert RunOptions().virtual_samples == 0  # off by default
    with pytest.raises(ValueError, match="option virtual_samples=-1 must be a non-negative integer"):
        RunOptions(virtual_samples=-1)
    with pytest.raises(ValueError, match="option virtual_seed='x' must be a non-negative integer"):
        RunOptions(virtual_seed="x")  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match="option virtual_samples=50 draws from exact-mode distributions; use it with mode=exact"
    ):
        RunOptions(mode="sample", virtual_samples=50)


def test_run_command_passes_the_virtual_options_to_lm_eval() -> None:
    import json

    from biasmonkey.harness_ext.app.cli import build_parser
    from biasmonkey.harness_ext.app.run import lm_eval_command

    args = build_parser().parse_args(["run", "--virtual-samples", "50", "--virtual-seed", "9"])
    cmd = lm_eval_command(args, "/models/m")
    metadata = json.loads(cmd[cmd.index("--metadata") + 1])
    assert (metadata["virtual_samples"], metadata["virtual_seed"]) == (50, 9)
    off = lm_eval_command(build_parser().parse_args(["run"]), "/models/m")
    assert "virtual_samples" not in json.loads(off[off.index("--metadata") + 1])


def test_each_perturbation_draw_has_its_own_stream() -> None:
    # perturbation_seeds: one record per (key, draw) in a task; their q sides ask the same q, but
    # their virtual answers must be independent draws (labels …:q:draw1 vs …:q:draw2)
    p = [0.3, 0.4, 0.3]
    one, two = (
        PairRecord("K1", "response_order", "key_typo", p, p, None, None, None, perturbation_seed=s) for s in (1, 2)
    )
    assert (
        draw_counts(p, 50, 0, "response_order:key_typo:K1:q:draw1").tolist() == virtual_counts(one, 50, 0)[0].tolist()
    )
    assert virtual_counts(one, 50, 0)[0].tolist() != virtual_counts(two, 50, 0)[0].tolist()
