"""Variants: the alternative acquiescence wording as its own task, several seeded perturbation
draws in one run (per-draw metrics, the draw-variation report line), and generation templates
in both harnesses (lm-eval on the tiny model; Inspect replaying its outputs through mockllm)."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from inspect_ai import eval as inspect_eval
from test_inspect import metrics, output, scripted
from test_lm_eval_e2e import REPO, metric, run_lm_eval

from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file
from biasmonkey.metrics import draw_variation, summarize_deltas
from biasmonkey.metrics.virtual_sampling import virtual_delta
from biasmonkey.tasks.contract import reported
from biasmonkey.tasks.response_bias.codecs import record_from_results as pair_record
from biasmonkey.tasks.response_bias.family import FAMILY
from biasmonkey.tasks.response_bias.inspect_task import TASKS, VARIANT_TASKS, pair_samples
from biasmonkey.tasks.response_bias.options import RunOptions, parse_seeds
from biasmonkey.tasks.response_bias.pairs import build_pairs
from biasmonkey.tasks.response_bias.scoring import PairRecord, sample_counts, score_weights
from biasmonkey.tasks.response_bias.summary import summarize

pytestmark = pytest.mark.usefixtures("data_dir")
SAMPLE_RUN = {"mode": "sample", "n_samples": 3, "template": "extended", "perturbation_seeds": [1, 2]}
SAMPLE_TASKS = ("odd_even_letter_swap",)
TASKS_FIXED = {"bias": "acquiescence", "setting": "key_typo", "reword": False}


# ---------------------------------------------------------------------------- options and pairs


@pytest.mark.parametrize("value", ["1,2,3", "[1, 2, 3]", " 1 2 3 ", [1, 2, 3], (1, 2, 3)])
def test_perturbation_seeds_are_read_from_text_or_lists(value) -> None:
    assert parse_seeds(value) == (1, 2, 3)
    assert parse_seeds(5) == (5,) and parse_seeds(None) is None


@pytest.mark.parametrize("value", ["1,1", "one", "", [1.5], [True]])
def test_bad_perturbation_seeds_are_errors_naming_the_option(value) -> None:
    with pytest.raises(ValueError, match="option perturbation_seeds=.* must be a list of distinct integers"):
        RunOptions(perturbation_seeds=value)


def test_one_seed_and_a_list_of_seeds_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="perturbation_seed=4 and perturbation_seeds=\\[1, 2\\] exclude each other"):
        RunOptions.from_mapping({"perturbation_seed": 4, "perturbation_seeds": "1,2"})


def test_a_perturbation_task_holds_every_draw_and_bias_tasks_ignore_seeds() -> None:
    opts = RunOptions(perturbation_seeds=(3, 1))
    pairs = opts.task_pairs("opinion_float", "key_typo")
    assert len(pairs) == 2 * 126
    # question by question, the draws in the given order; each draw is the single-seed draw
    assert [(p["key"], p["perturbation_seed"]) for p in pairs[:4]] == [
        (pairs[0]["key"], 3),
        (pairs[0]["key"], 1),
        (pairs[2]["key"], 3),
        (pairs[2]["key"], 1),
    ]
    for seed in (3, 1):
        single = build_pairs("opinion_float", "key_typo", perturbation_seed=seed)
        assert [p["qp"] for p in pairs if p["perturbation_seed"] == seed] == [p["qp"] for p in single]
    assert pairs[0]["qp"] != pairs[1]["qp"]
    bias_pairs = opts.task_pairs("opinion_float", "bias")
    assert len(bias_pairs) == 126 and {p["perturbation_seed"] for p in bias_pairs} == {None}
    # Inspect ids carry the draw; a single seed keeps the plain key (as before)
    samples = pair_samples(opts, "opinion_float", "key_typo")
    assert samples[0].id == f"{pairs[0]['key']}#s3" and len({s.id for s in samples}) == 252
    assert pair_samples(RunOptions(perturbation_seed=3), "opinion_float", "key_typo")[0].id == pairs[0]["key"]


# ---------------------------------------------------------------------------- the reword task


def test_reword_task_is_tagged_but_outside_the_main_group() -> None:
    tasks_dir = REPO / "tasks" / "response_bias"
    config = yaml.safe_load((tasks_dir / "acquiescence_reword.yaml").read_text())
    assert config["task"] == "biasmonkey_acquiescence_reword"
    assert config["dataset_kwargs"] == {"bias": "acquiescence", "setting": "bias", "reword": True}
    assert config["tag"] == ["biasmonkey-response_bias-variants"]
    group = yaml.safe_load((tasks_dir / "_biasmonkey_group.yaml").read_text())
    assert "biasmonkey_acquiescence_reword" not in group["task"] and len(group["task"]) == 20
    assert "acquiescence_reword" not in TASKS and set(VARIANT_TASKS) == {"acquiescence_reword"}
    reword = VARIANT_TASKS["acquiescence_reword"]().dataset
    assert reword.name == "acquiescence_reword" and len(reword) == 176
    assert {s.metadata["source"] for s in reword} == {"prompts/acquiescence_reword.csv"}
    plain = {s.id: s for s in TASKS["acquiescence"]().dataset}
    assert all(s.metadata["q"] == plain[s.id].metadata["q"] for s in reword)  # same q, reworded q'
    assert sum(s.metadata["qp"] != plain[s.id].metadata["qp"] for s in reword) > 100


# ---------------------------------------------------------------------------- draw variation


def test_draw_variation_gives_each_draw_and_the_spread() -> None:
    def rec(key: str, seed: int | None, delta: float | None, setting: str = "key_typo") -> PairRecord:
        return PairRecord(key, "acquiescence", setting, None, None, delta, None, None, perturbation_seed=seed)

    records = [
        rec("a", 1, 1.0),
        rec("b", 1, 2.0),
        rec("c", 1, 6.0),
        rec("a", 2, -1.0),
        rec("b", 2, 0.0),
        rec("c", 2, None),  # c has no Δ in draw 2
        rec("a", 3, 4.0),
        rec("b", 3, 5.0),
        rec("c", 3, 6.0),
        rec("a", None, 9.0, setting="bias"),  # not a draw: skipped
    ]
    (v,) = draw_variation(records)
    assert (v.bias, v.setting, list(v.draws)) == ("acquiescence", "key_typo", [1, 2, 3])
    # draw 1: mean 3, SD sqrt(((−2)² + (−1)² + 3²)/2) = sqrt(7), stderr sqrt(7/3), t = 3/sqrt(7/3) = 1.9640
    #   on 2 df: p = 1 − t/sqrt(t² + 2) = 0.1885
    t1 = 3 / math.sqrt(7 / 3)
    assert v.draws[1].mean == pytest.approx(3.0) and v.draws[1].p == pytest.approx(1 - t1 / math.sqrt(t1**2 + 2))
    # draw 2: n 2, mean −0.5, stderr 0.5, t −1 on 1 df: p = 1 − (2/π)·atan(1) = 0.5
    assert v.draws[2].n == 2 and v.draws[2].p == pytest.approx(0.5)
    # draw 3: mean 5, SD 1, stderr 1/sqrt(3), t = 5·sqrt(3) = 8.660 on 2 df: p = 1 − t/sqrt(t² + 2) = 0.01307
    t3 = 5 * math.sqrt(3)
    assert v.draws[3].p == pytest.approx(1 - t3 / math.sqrt(t3**2 + 2))
    # draw means 3, −0.5, 5: range 5.5; SD sqrt(((0.5)² + (−3)² + 2.5²)/2) = sqrt(7.75)
    assert v.delta_range == pytest.approx(5.5) and v.delta_sd == pytest.approx(math.sqrt(7.75))
    assert (v.n_significant, v.n_significant_positive, v.n_significant_negative) == (1, 1, 0)
    # pooled per question: a (1 − 1 + 4)/3 = 4/3, b (2 + 0 + 5)/3 = 7/3, c (6 + 6)/2 = 6 → mean 29/9
    assert v.pooled.n == 3 and v.pooled.mean == pytest.approx(29 / 9)
    line = v.report_line()
    assert line.startswith(
        "acquiescence/key_typo: Δ per draw s1 3.00 (p 0.188, n 3), s2 -0.50 (p 0.5, n 2), s3 5.00 (p 0.0131, n 3)"
    )
    assert "range 5.50, SD 2.78; significant in 1 of 3 testable draws (1+, 0−); pooled 3.22 (p " in line
    assert v.n_untestable == 0 and "untestable" not in line
    with pytest.raises(ValueError, match="pair a appears twice in draw 1"):
        draw_variation([rec("a", 1, 1.0), rec("a", 1, 2.0)])


def test_draw_variation_counts_untestable_draws_apart() -> None:
    def rec(key: str, seed: int, delta: float | None) -> PairRecord:
        return PairRecord(key, "acquiescence", "key_typo", None, None, delta, None, None, perturbation_seed=seed)

    # draw 1: Δ 1, 2, 3 (testable); draw 2: no Δ at all; draw 3: one Δ (4) → no t-test
    records = [rec(k, 1, d) for k, d in zip("abc", (1.0, 2.0, 3.0))]
    records += [rec(k, 2, None) for k in "abc"] + [rec("a", 3, 4.0), rec("b", 3, None), rec("c", 3, None)]
    (v,) = draw_variation(records)
    # draw 1: mean 2, SD 1, stderr 1/√3, t = 2√3 = 3.4641 on 2 df: p = 1 − t/√(t² + 2) = 1 − 3.4641/3.7417 = 0.0742
    assert v.draws[1].p == pytest.approx(1 - 2 * math.sqrt(3) / math.sqrt(14)) and not v.draws[1].significant
    assert v.draws[2].significant is None and v.draws[3].significant is None
    assert (v.n_significant, v.n_untestable) == (0, 2)
    # the spread of the draws with a Δ (means 2 and 4): range 2, SD √((1² + 1²)/1) = √2, not NaN
    assert v.delta_range == pytest.approx(2.0) and v.delta_sd == pytest.approx(math.sqrt(2))
    assert v.report_line() == (
        "acquiescence/key_typo: Δ per draw s1 2.00 (p 0.0742, n 3), s2 n/a (p n/a, n 0), s3 4.00 (p n/a, n 1); "
        "range 2.00, SD 1.41 over the 2 draws with a Δ; significant in 0 of 1 testable draws (0+, 0−); "
        "2 untestable (s2 no pair with a Δ, s3 1 pair: no t-test); "
        # pooled per question: a (1 + 4)/2 = 2.5, b 2, c 3 → mean 2.5, SD 0.5, stderr 0.5/√3, t 5√3 = 8.660 → p 0.0131
        "pooled 2.50 (p 0.0131, 3 questions)"
    )
    # every draw without spread: none testable, none counted as "not significant"
    same = [rec(k, seed, 5.0) for seed in (1, 2) for k in "abcd"]
    (w,) = draw_variation(same)
    assert (w.n_significant, w.n_untestable) == (0, 2)
    assert "significant in 0 of 0 testable draws; 2 untestable (s1 no spread: all 4 Δ equal to 12 digits, " in (
        w.report_line()
    )


@pytest.mark.parametrize("harness", ["lm_eval", "inspect"])
def test_with_several_draws_the_task_tests_each_question_once(harness: str) -> None:
    """Δ's t-test of a task with perturbation_seeds is over questions, each averaged over its draws
    (as `biasmonkey summarize`), not over the pairs of all draws; the per-draw metrics stay per draw."""

    def rec(key: str, seed: int, delta: float | None) -> PairRecord:
        return PairRecord(key, "acquiescence", "key_typo", None, None, delta, 0.5, 0.5, perturbation_seed=seed)

    deltas = {"a": (1.0, -1.0, 4.0), "b": (2.0, 0.0, 5.0), "c": (6.0, None, 6.0)}  # c: no Δ in draw 2
    records = [rec(key, seed, d[seed - 1]) for key, d in deltas.items() for seed in (1, 2, 3)]
    options = RunOptions(perturbation_seeds=(1, 2, 3))
    table = {m.name: m.compute(records) for m in reported(FAMILY, options, harness, TASKS_FIXED)}
    # per question: a 4/3, b 7/3, c 12/2 = 6 → mean 29/9; deviations −17/9, −8/9, 25/9: variance
    # (289 + 64 + 625)/81/2 = 489/81, stderr √(489/81/3) = √163/9, t = 29/√163 = 2.2715 on 2 df:
    # p = 1 − t/√(t² + 2) = 1 − 29/√1167 = 0.1511 (the 8 pairs pooled: mean 23/8, t 3.05 on 7 df, p 0.019)
    assert table["n_pairs"] == 3
    assert table["delta"] == pytest.approx(29 / 9)
    assert table["delta_stderr"] == pytest.approx(math.sqrt(163) / 9)
    assert table["delta_t"] == pytest.approx(29 / math.sqrt(163))
    assert table["delta_p"] == pytest.approx(1 - 29 / math.sqrt(1167))
    half = (table["delta_ci_high"] - table["delta_ci_low"]) / 2
    assert half == pytest.approx(4.302653 * math.sqrt(163) / 9, rel=1e-6)  # t(0.975, 2 df) · stderr
    row = summarize(records)
    assert (row["n_pairs"], row["delta"], row["p"]) == (3, pytest.approx(29 / 9), pytest.approx(table["delta_p"]))
    # draw 2 alone: Δ −1, 0 → mean −0.5 over its 2 pairs
    assert table["delta_s2"] == pytest.approx(-0.5) and table["n_pairs_s2"] == 2
    # one draw (or none): the pairs themselves, as before
    single = {m.name: m.compute(records[:3]) for m in reported(FAMILY, RunOptions(), harness, TASKS_FIXED)}
    assert single["n_pairs"] == 3 and single["delta"] == pytest.approx(4 / 3)


def test_virtual_delta_with_several_draws_is_tested_per_question_too() -> None:
    def rec(key: str, seed: int, share: float) -> PairRecord:
        return score_weights(
            {"key": key, "bias": "acquiescence", "setting": "key_typo", "q_letters": ["A", "B"],
             "qp_letters": ["A", "B"], "qp_positions": [0, 1], "perturbation_seed": seed},
            [0.5, 0.5],
            [share, 1 - share],
            valid_mass_q=1.0,
            valid_mass_qp=1.0,
        )  # fmt: skip

    records = [rec(k, s, share) for k, s, share in [("a", 1, 0.6), ("a", 2, 0.9), ("b", 1, 0.3), ("b", 2, 0.5)]]
    options = RunOptions(perturbation_seeds=(1, 2), virtual_samples=20, virtual_seed=3)
    table = {m.name: m.compute(records) for m in reported(FAMILY, options, "inspect", TASKS_FIXED)}
    # each question's virtual Δ averaged over its 2 draws, then tested over the 2 questions
    per_question = [(virtual_delta(x, 20, 3) + virtual_delta(y, 20, 3)) / 2 for x, y in (records[:2], records[2:])]
    expected = summarize_deltas(per_question)
    assert table["virtual_n_pairs"] == 2
    assert table["virtual_delta"] == pytest.approx(expected.mean)
    assert table["virtual_delta_t"] == pytest.approx(expected.t) and table["virtual_delta_p"] == pytest.approx(
        expected.p
    )


# ---------------------------------------------------------------------------- harness runs


def test_inspect_reports_every_draw(tmp_path: Path) -> None:
    opts = RunOptions(perturbation_seeds=(1, 2))
    samples = pair_samples(opts, "acquiescence", "key_typo")[:4]  # 2 questions × 2 draws
    q = {s.input for s in samples}
    qp = [s.metadata["qp_prompt"] for s in samples]
    assert len(q) == 2 and len(set(qp)) == 4 and not q & set(qp)
    # acquiescence Δ = 100(q'[a] − q[a]) with q = [.5, .5]: q' A shares .6, .8 (question 1, draws
    # 1, 2) and .7, .95 (question 2) → Δ 10, 30, 20, 45
    shares = dict(zip(qp, (0.6, 0.8, 0.7, 0.95)))
    script = {prompt: (lambda a=a: output("A", [(" A", a), (" B", 1 - a)])) for prompt, a in shares.items()}
    script.update({prompt: lambda: output("A", [(" A", 0.5), (" B", 0.5)]) for prompt in q})
    (log,) = inspect_eval(
        "biasmonkey/acquiescence_key_typo",
        model=scripted(script),
        limit=4,
        task_args={"perturbation_seeds": "1,2"},
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    m = metrics(log)
    # draw 1: Δ 10, 20 → mean 15, stderr 5, t 3 on 1 df → p = 1 − (2/π)·atan(3); draw 2: Δ 30, 45 → 37.5
    assert m["delta_s1"] == pytest.approx(15) and m["delta_s1_stderr"] == pytest.approx(5)
    assert m["delta_s1_t"] == pytest.approx(3) and m["delta_s1_p"] == pytest.approx(1 - 2 / math.pi * math.atan(3))
    assert m["delta_s2"] == pytest.approx(37.5) and m["n_pairs_s2"] == 2
    # Δ's t-test is over questions, each averaged over its draws: (10 + 30)/2 = 20 and (20 + 45)/2 = 32.5
    # → mean 26.25, stderr |32.5 − 20|/2 = 6.25, t 4.2 on 1 df (pooling the 4 pairs: t 3.85 on 3 df)
    assert m["delta"] == pytest.approx(26.25) and m["n_pairs"] == 2
    assert m["delta_stderr"] == pytest.approx(6.25) and m["delta_t"] == pytest.approx(4.2)
    assert m["delta_p"] == pytest.approx(1 - 2 / math.pi * math.atan(4.2))
    records = records_from_eval_log(log.location)
    assert [r.perturbation_seed for r in records] == [1, 2, 1, 2]
    row = summarize(records)  # `biasmonkey summarize`'s row: the same test
    assert (row["n_pairs"], row["p"]) == (2, pytest.approx(m["delta_p"], rel=1e-12))
    (v,) = draw_variation(records)
    assert v.delta_range == pytest.approx(22.5)


@pytest.fixture(scope="module")
def exact_seed_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """Exact mode: the reword task and 3 draws of a perturbation (2 questions each)."""
    return run_lm_eval(
        tiny_model,
        tmp_path_factory.mktemp("exact") / "out",
        "biasmonkey_acquiescence_reword,biasmonkey_acquiescence_key_typo",
        "--limit",
        "6",
        "--metadata",
        '{"perturbation_seeds": [1, 2, 3]}',
    )


def delta_fields(summary: Any) -> list[tuple[str, float]]:
    """A Δ summary's metrics as the task names them after `delta` (or `delta_s<seed>`)."""
    return [
        ("", summary.mean),
        ("_stderr", summary.stderr),
        ("_t", summary.t),
        ("_p", summary.p),
        ("_ci_low", summary.ci_low),
        ("_ci_high", summary.ci_high),
    ]


def test_lm_eval_reports_every_draw_besides_the_test_over_questions(exact_seed_run) -> None:
    results, samples = exact_seed_run
    task = results["results"]["biasmonkey_acquiescence_key_typo"]
    records = records_from_samples_file(samples["biasmonkey_acquiescence_key_typo"])
    assert [r.perturbation_seed for r in records] == [1, 2, 3, 1, 2, 3]
    assert len({r.key for r in records}) == 2
    by_seed = defaultdict(list)
    for r in records:
        by_seed[r.perturbation_seed].append(r.delta)
    for seed, deltas in by_seed.items():
        expected = summarize_deltas(deltas)
        assert metric(task, f"n_pairs_s{seed}") == 2
        for suffix, value in delta_fields(expected):
            assert metric(task, f"delta_s{seed}{suffix}") == pytest.approx(value, rel=1e-9), (seed, suffix)
    # Δ's t-test over the 2 questions, each averaged over its 3 draws, as `biasmonkey summarize` tests it
    per_question = [sum(r.delta for r in records if r.key == key) / 3 for key in dict.fromkeys(r.key for r in records)]
    expected = summarize_deltas(per_question)
    row = summarize(records)
    assert metric(task, "n_pairs") == row["n_pairs"] == 2
    for suffix, value in delta_fields(expected):
        assert metric(task, f"delta{suffix}") == pytest.approx(value, rel=1e-9), suffix
    assert row["p"] == pytest.approx(expected.p, rel=1e-9)
    # the reword task: the reworded q' of the first 6 questions, no draws, no per-draw metrics
    reword = records_from_samples_file(samples["biasmonkey_acquiescence_reword"])
    docs = [json.loads(line)["doc"] for line in samples["biasmonkey_acquiescence_reword"].read_text().splitlines()]
    assert [d["qp"] for d in docs] == [p["qp"] for p in build_pairs("acquiescence", "bias", reword=True)[:6]]
    assert {r.perturbation_seed for r in reword} == {None}
    assert not any(re.match(r"(delta|n_pairs)_s\d", k) for k in results["results"]["biasmonkey_acquiescence_reword"])


@pytest.fixture(scope="module")
def generation_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """Sample mode with the extended-generation template: 2 draws of a perturbation (2 questions)."""
    return run_lm_eval(
        tiny_model,
        tmp_path_factory.mktemp("gen") / "out",
        ",".join(f"biasmonkey_{t}" for t in SAMPLE_TASKS),
        "--limit",
        "4",
        "--metadata",
        json.dumps(SAMPLE_RUN),
    )


def test_lm_eval_sends_the_templates_generation_requests(generation_run) -> None:
    results, samples = generation_run
    for task in SAMPLE_TASKS:
        for line in samples[f"biasmonkey_{task}"].read_text().splitlines():
            sample = json.loads(line)
            (q_args, qp_args) = [a for a in sample["arguments"].values()][:2]
            # the preprint's extended-generation template (Appendix C), as published
            assert q_args["arg_0"].startswith("Please answer the question below in the following format:\n")
            kwargs = q_args["arg_1"]
            assert kwargs["max_gen_toks"] == 50 and "\n" not in kwargs["until"] and kwargs["do_sample"] is True
            assert [len(side) for side in sample["filtered_resps"]] == [3, 3]


def test_generation_outputs_give_identical_records_in_inspect(generation_run, tmp_path: Path) -> None:
    """Inspect's mockllm replays each prompt's lm-eval outputs; the shared parser must give the same records."""
    _, samples = generation_run
    for task in SAMPLE_TASKS:
        logged = [json.loads(line) for line in samples[f"biasmonkey_{task}"].read_text().splitlines()]
        lm_records = records_from_samples_file(samples[f"biasmonkey_{task}"])
        assert sum(r.n_answers for r in lm_records) == len(logged) * 6
        for seed in (1, 2):
            # one Inspect run per draw (a question's q prompt is the same in every draw)
            draw = [s for s in logged if s["doc"]["perturbation_seed"] == seed]
            outputs = {}
            for s in draw:
                (q_args, qp_args) = list(s["arguments"].values())[:2]
                for prompt, answers in zip((q_args["arg_0"], qp_args["arg_0"]), s["filtered_resps"]):
                    outputs[prompt] = iter(answers)
            model = scripted({p: (lambda it=it: output(next(it))) for p, it in outputs.items()})
            args = {**SAMPLE_RUN, "perturbation_seeds": None, "perturbation_seed": seed}
            (log,) = inspect_eval(
                f"biasmonkey/{task}",
                model=model,
                limit=len(draw),
                task_args=args,
                log_dir=str(tmp_path / task / str(seed)),
                display="none",
            )
            assert log.status == "success", log.error
            theirs = {r.key: r for r in lm_records if r.perturbation_seed == seed}
            ours = records_from_eval_log(log.location)
            assert {r.key for r in ours} == set(theirs)
            for rec in ours:
                assert rec == theirs[rec.key], rec.key


def test_scripted_generation_outputs_count_the_same_in_both_adapters(tmp_path: Path) -> None:
    """Hand-made extended-template outputs: valid, invalid and unoffered answers."""
    (sample,) = pair_samples(RunOptions(mode="sample", template="extended"), "acquiescence", "bias")[:1]
    q_out = [" A\nReason: safer", "\nAnswer: B", " A.", "I would say A"]
    qp_out = [" A - agree", " C\nReason: none", " (a)", " B\nReason: no"]
    answers = {sample.input: iter(q_out), sample.metadata["qp_prompt"]: iter(qp_out)}
    model = scripted({p: (lambda it=it: output(next(it))) for p, it in answers.items()})
    (log,) = inspect_eval(
        "biasmonkey/acquiescence",
        model=model,
        limit=1,
        log_dir=str(tmp_path),
        display="none",
        task_args={"mode": "sample", "n_samples": 4, "template": "extended"},
    )
    m = metrics(log)
    # q: A 2, B 1, 1 invalid → [2/3, 1/3]; q': A 2, B 1, C not offered → [2/3, 1/3]; Δ = 100(2/3 − 2/3) = 0
    # invalid: 2 of 8
    assert m["delta"] == pytest.approx(0.0, abs=1e-9) and m["invalid_rate"] == pytest.approx(0.25)
    (inspect_record,) = records_from_eval_log(log.location)
    lm_eval_record = pair_record(sample.metadata, [q_out, qp_out], "sample")
    assert inspect_record == lm_eval_record
    assert sample_counts(sample.metadata, q_out, qp_out) == ([2, 1], [2, 1], 8, 2)
    assert score_weights(sample.metadata, [2, 1], [2, 1], 8, 2) == lm_eval_record


def test_summaries_give_the_variant_a_table_of_its_own_and_reports_name_it(
    exact_seed_run, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The reword task is outside the suite: not in the family's table, score or report, and said so (it
    used to vanish without a word); `summarize` gives it a table of its own, its numbers lm-eval's."""
    from biasmonkey.harness_ext.app.cli import main

    results, samples = exact_seed_run
    task = "biasmonkey_acquiescence_reword"
    out = samples[task].parent.parent
    said = f"Not in the families' tables, scores or verdicts: {task}, run here but a variant outside its family's suite"
    assert main(["summarize", str(out), "--out", str(tmp_path / "summary")]) == 0
    md = (tmp_path / "summary" / "summary.md").read_text()
    assert said in md and "its numbers are in a table of their own below" in md
    assert "## Survey response biases (Tjuatja et al., TACL 2024): variants outside the suite" in md
    rows = list(csv.DictReader((tmp_path / "summary" / "summary.csv").open()))
    (reword,) = [r for r in rows if r["family"] == "response_bias (variant)"]
    assert reword["task"] == "acquiescence_reword"
    for name in ("delta", "delta_p", "n_pairs"):  # recomputed from the records: lm-eval's numbers
        assert float(reword[name]) == pytest.approx(metric(results["results"][task], name))
    assert {r["family"] for r in rows} == {"response_bias", "response_bias (variant)"}
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.md").read_text()
    assert said in page and "its numbers are in `biasmonkey summarize`" in page
    # a folder holding only the variant: its table alone; the report has nothing to show and says why
    only = tmp_path / "only" / "model"
    only.mkdir(parents=True)
    shutil.copy(samples[task], only)
    assert main(["summarize", str(only.parent), "--out", str(tmp_path / "s2")]) == 0
    assert "variants outside the suite" in (tmp_path / "s2" / "summary.md").read_text()
    capsys.readouterr()
    assert main(["report", str(only.parent), "--out", str(tmp_path / "r2")]) == 2
    assert f"{only.parent}: no biasmonkey outputs" in (err := capsys.readouterr().err) and said in err


def test_a_variant_run_in_both_harnesses_gets_a_row_per_harness_named(
    exact_seed_run, tiny_model: Path, tmp_path: Path
) -> None:
    """One model and setting, the variant through lm-eval and Inspect into one folder: two rows in its
    table, each naming its harness (they used to stand unlabelled)."""
    from biasmonkey.harness_ext.app.cli import main

    _, samples = exact_seed_run
    task = "biasmonkey_acquiescence_reword"
    folder = tmp_path / "both"
    shutil.copytree(samples[task].parent.parent, folder)
    (log,) = inspect_eval(
        "biasmonkey/acquiescence_reword",
        model=f"hf/{tiny_model}",
        model_args={
            "device": "cpu",
            "dtype": "float32",
            **yaml.safe_load((REPO / "configs" / "inspect_hf_raw_prompt.yaml").read_text()),
        },
        limit=6,
        task_args={"perturbation_seeds": "1,2,3"},
        log_dir=str(folder / "inspect"),
        display="none",
        max_connections=1,
    )
    assert log.status == "success", log.error
    assert main(["summarize", str(folder), "--out", str(tmp_path / "summary")]) == 0
    rows = [r for r in csv.DictReader((tmp_path / "summary" / "summary.csv").open()) if "variant" in r["family"]]
    assert sorted(r["harness"] for r in rows) == ["inspect", "lm-eval"], rows
    assert {r["task"] for r in rows} == {"acquiescence_reword"} and len({r["model"] for r in rows}) == 1
    # the suite's own table, where each task ran in lm-eval only, has no harness column
    assert all(
        r["harness"] == ""
        for r in csv.DictReader((tmp_path / "summary" / "summary.csv").open())
        if r["family"] == "response_bias"
    )
