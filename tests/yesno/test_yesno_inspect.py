"""The yes-no Inspect tasks: `mockllm/model` with scripted log-probabilities (offline), the
`inspect eval` CLI on the tiny hf model, and parity with lm-eval on a tiny model."""

from __future__ import annotations

import logging
import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, get_model
from test_inspect import metrics, output, run, scripted
from test_lm_eval_e2e import REPO, metric, run_lm_eval
from test_yesno_lm_eval import REPORTED  # the lm-eval tasks' metrics
from tokenizers import processors
from transformers import AutoTokenizer

from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file
from biasmonkey.metrics.yesno import stratified_kfold
from biasmonkey.tasks.yesno.inspect_task import TASKS, hf_null_prompt
from biasmonkey.tasks.yesno.scoring import ItemRecord, summarize

pytestmark = pytest.mark.usefixtures("data_dir")
RAW_PROMPT = yaml.safe_load((REPO / "configs" / "inspect_hf_raw_prompt.yaml").read_text())
Top = list[tuple[str, float]]  # (token, probability)


def comps_prompts(n: int) -> list[str]:
    """The prompts of comps-1..n, whose gold answers are Yes, Yes, No, No, … (checked)."""
    samples = TASKS["yesno_comps"]().dataset[:n]
    assert [s.metadata["gold"] for s in samples] == ["Yes", "Yes", "No", "No"][:n]
    return [s.input for s in samples]


def counted(calls: list[str], name: str, top: Top) -> Callable[[], ModelOutput]:
    """A scripted answer that records each time it is asked."""

    def answer() -> ModelOutput:
        calls.append(name)
        return output("Yes", top)

    return answer


# Null (no-context) prompt, unset → "" for a provider other than hf/: P(" Yes") .5 + P("Yes") .1 = .6,
# P(" No") .2 + P("No") .1 = .3 → null_yes = log .6, null_no = log .3: Generic subtracts log 2 from each margin.
NULL_TOP: Top = [(" Yes", 0.5), ("Yes", 0.1), (" No", 0.2), ("No", 0.1), ("z", 0.1)]
# comps-1..4 (gold Yes, Yes, No, No); space markers " ", "Ġ", "▁" all read as the spelling with a space.
ITEM_TOPS: list[Top] = [
    [(" Yes", 0.4), ("Yes", 0.1), ("ĠNo", 0.2), ("No", 0.1), ("x", 0.2)],  # yes .5, no .3
    [("▁Yes", 0.2), ("Yes", 0.15), (" No", 0.2), ("No", 0.1), ("y", 0.35)],  # yes .35, no .3
    [(" Yes", 0.3), ("Yes", 0.3), (" No", 0.1), ("No", 0.1), ("x", 0.2)],  # yes .6, no .2
    [(" Yes", 0.2), ("Yes", 0.1), (" No", 0.3), ("No", 0.3), ("x", 0.1)],  # yes .3, no .6
]


def test_metrics_from_scripted_logprobs(tmp_path: Path) -> None:
    calls: list[str] = []
    prompts = comps_prompts(4)
    model = scripted(
        {"": counted(calls, "null", NULL_TOP), **{p: counted(calls, p, t) for p, t in zip(prompts, ITEM_TOPS)}}
    )
    log = run("biasmonkey/yesno_comps", model, tmp_path, limit=4)
    assert log.status == "success", log.error
    assert calls.count("null") == 1  # one no-context request for all four items
    m = metrics(log)
    # Margins yes − no: log(.5/.3) = .5108, log(.35/.3) = .1542, log(.6/.2) = 1.0986, log(.3/.6) = −.6931
    # Base: votes Yes, Yes, Yes, No → bias (3 − 1)/4 = .5; correct ✓ ✓ ✗ ✓ → accuracy .75
    assert (m["bias"], m["accuracy"], m["n"]) == (0.5, 0.75, 4)
    # Generic: margins − log(.6/.3) = −.1823, −.5390, .4055, −1.3863 → No, No, Yes, No
    # → bias (1 − 3)/4 = −.5; correct ✗ ✗ ✗ ✓ → .25; Δ% = 100(−.5 − .5)/.5 = −200, 100(.25 − .75)/.75 = −66.667
    assert (m["bias_generic"], m["accuracy_generic"]) == (-0.5, 0.25)
    assert m["delta_pct_bias_generic"] == pytest.approx(-200)
    assert m["delta_pct_accuracy_generic"] == pytest.approx(-200 / 3)
    # Specific, k = 5 folds for 4 items: each item alone, c = mean of the other three margins / 2, so the
    # corrected margin is m − (S − m)/3 with S = 1.0705: .3242, −.1512, 1.1080, −1.2809 → Yes, No, Yes, No
    # → bias 0; correct ✓ ✗ ✗ ✓ → .5; Δ% bias = −100, Δ% accuracy = 100(.5 − .75)/.75 = −33.333
    assert (m["bias_specific"], m["accuracy_specific"]) == (0.0, 0.5)
    assert m["delta_pct_bias_specific"] == pytest.approx(-100)
    assert m["delta_pct_accuracy_specific"] == pytest.approx(-100 / 3)
    # P(yes) = yes/(yes + no): gold Yes .5/.8 = .625 and .35/.65 = .538462 → .581731; gold No .75 and 1/3 → .541667
    assert m["p_yes_gold_yes"] == pytest.approx((0.625 + 0.35 / 0.65) / 2)
    assert m["p_yes_gold_no"] == pytest.approx((0.75 + 1 / 3) / 2)
    assert m["imputed_continuations"] == 0

    sample = log.samples[0]
    score = sample.scores["yesno_scorer"]
    assert sample.id == "comps-1" and score.answer == "Yes" and score.metadata["null_prompt"] == ""
    value = score.value
    assert [value[k] for k in ("lp_space_yes", "lp_yes", "lp_space_no", "lp_no")] == pytest.approx(
        [math.log(p) for p in (0.4, 0.1, 0.2, 0.1)]
    )
    assert [value[k] for k in ("null_lp_space_yes", "null_lp_yes", "null_lp_space_no", "null_lp_no")] == pytest.approx(
        [math.log(p) for p in (0.5, 0.1, 0.2, 0.1)]
    )
    assert value["yes"] == pytest.approx(math.log(0.5)) and value["null_no"] == pytest.approx(math.log(0.3))
    assert value["gold_yes"] == 1 and value["n_imputed"] == value["n_imputed_null"] == 0

    records = records_from_eval_log(log.location)
    assert [r.id for r in records] == ["comps-1", "comps-2", "comps-3", "comps-4"]
    summary = summarize(records).as_dict()
    assert {k: summary[k] for k in REPORTED} == pytest.approx({k: m[k] for k in REPORTED})


def test_specific_folds_follow_k_and_seed(tmp_path: Path) -> None:
    prompts = comps_prompts(4)
    tops = [
        *ITEM_TOPS[:3],
        [(" Yes", 0.3), ("Yes", 0.15), (" No", 0.3), ("No", 0.2), ("x", 0.05)],
    ]  # comps-4: yes .45, no .5
    model = scripted(
        {"": lambda: output("Yes", NULL_TOP), **{p: (lambda t=t: output("Yes", t)) for p, t in zip(prompts, tops)}}
    )
    # Margins .5108, .1542, 1.0986, log(.45/.5) = −.1054. With k = 2 each fold holds one Yes and one No item;
    # seed 2 draws the folds [1, 0, 0, 1]: {comps-1, comps-4} and {comps-2, comps-3}.
    assert stratified_kfold([True, True, False, False], k=2, seed=2).tolist() == [1, 0, 0, 1]
    log = run("biasmonkey/yesno_comps", model, tmp_path, limit=4, task_args={"k": 2, "seed": 2})
    m = metrics(log)
    # Each item's margin minus the mean margin of the other fold: fold means (.5108 − .1054)/2 = .2027 and
    # (.1542 + 1.0986)/2 = .6264 → −.1156, −.0485, .8959, −.7318 → No, No, Yes, No: bias −.5; ✗ ✗ ✗ ✓ → .25
    assert (m["bias_specific"], m["accuracy_specific"]) == (-0.5, 0.25)
    # The default k = 5 (each item alone): m − (S − m)/3 with S = 1.6582 → .1283, −.3471, .9121, −.6933 → bias 0, .5
    log5 = run("biasmonkey/yesno_comps", model, tmp_path, limit=4)
    assert (metrics(log5)["bias_specific"], metrics(log5)["accuracy_specific"]) == (0.0, 0.5)


def test_spellings_missing_from_the_top_k_are_imputed_and_counted(tmp_path: Path) -> None:
    p1, p2 = comps_prompts(2)
    model = scripted(
        {
            # "No" not returned: floor = min(smallest .05, unreturned (1 − .95)/1) = .05 → no = log(.2 + .05)
            p1: lambda: output("Yes", [(" Yes", 0.5), ("Yes", 0.2), (" No", 0.2), ("z", 0.05)]),
            p2: lambda: output("Yes", ITEM_TOPS[1]),
            # "Yes" and "No" not returned: floor = min(.3, (1 − .9)/2) = .05 each → null yes .65, null no .35
            "": lambda: output("Yes", [(" Yes", 0.6), (" No", 0.3)]),
        }
    )
    log = run("biasmonkey/yesno_comps", model, tmp_path, limit=2, epochs=2)
    assert log.status == "success", log.error
    # 1 imputed after comps-1's prompt + 2 in the single no-context measurement (not 2 per item);
    # the two epochs give the same numbers, which the mean reducer keeps.
    assert metrics(log)["imputed_continuations"] == 3
    assert [r.id for r in records_from_eval_log(log.location)] == ["comps-1", "comps-2"]  # epoch-reduced
    value = log.samples[0].scores["yesno_scorer"].value
    assert value["lp_no"] == pytest.approx(math.log(0.05)) and value["no"] == pytest.approx(math.log(0.25))
    assert (value["n_imputed"], value["n_imputed_null"]) == (1, 2)
    assert (value["null_yes"], value["null_no"]) == pytest.approx((math.log(0.65), math.log(0.35)))


def test_a_provider_without_logprobs_is_a_clear_error(tmp_path: Path) -> None:
    log = run("biasmonkey/yesno_comps", scripted({}, default=output("Yes")), tmp_path, limit=1)
    assert log.status == "error"
    message = log.error.message
    assert "returned no top_logprobs" in message and "read answers from log-probabilities only" in message
    assert "mode=sample" not in message  # the yes-no tasks have no sampling protocol


def test_null_prompt_option(tmp_path: Path) -> None:
    (p1,) = comps_prompts(1)
    calls: list[str] = []
    model = scripted({p1: lambda: output("Yes", ITEM_TOPS[0]), "Q:": counted(calls, "Q:", NULL_TOP)})  # "" unscripted
    log = run("biasmonkey/yesno_comps", model, tmp_path, limit=1, task_args={"null_prompt": "Q:"})
    assert log.status == "success", log.error
    assert calls == ["Q:"] and log.samples[0].scores["yesno_scorer"].metadata["null_prompt"] == "Q:"

    def refuse_empty(messages, tools, tool_choice, config) -> ModelOutput:
        if not messages[-1].text:
            raise ValueError("empty prompts are not accepted")
        return output("Yes", ITEM_TOPS[0])

    log = run("biasmonkey/yesno_comps", get_model("mockllm/model", custom_outputs=refuse_empty), tmp_path, limit=1)
    assert log.status == "error"
    assert "no-context prompt null_prompt='' of the Generic correction" in log.error.message
    assert "empty prompts are not accepted" in log.error.message and "set -T null_prompt=" in log.error.message


def test_task_parameters_are_validated() -> None:
    task = TASKS["yesno_comps"]
    for option, bad, message in [
        ("top_logprobs", 0, "option top_logprobs=0 must be a positive integer"),
        ("k", 1, "option k=1 must be at least 2"),
        ("seed", "x", "option seed='x' must be an integer from 0 to 4,294,967,295"),
        (
            "null_prompt",
            {"Q": None},
            "option null_prompt={'Q': None} must be a text; quote it",
        ),  # what -T null_prompt=Q: parses to
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            task(**{option: bad})
    assert TASKS["yesno_ewok_social_relations_fewshot"](k=3, seed=7).dataset[0].metadata == {
        "id": "ewok-social_relations-1",
        "dataset": "ewok",
        "domain": "social_relations",
        "gold": "Yes",
        "k": 3,
        "seed": 7,
    }


def test_every_lm_eval_task_has_an_inspect_task_that_runs(tmp_path: Path) -> None:
    lm_eval_names = sorted(
        name
        for f in (REPO / "tasks" / "yesno").glob("*.yaml")
        for name in re.findall(r"^task: (biasmonkey_yesno_\w+)$", f.read_text(), flags=re.M)
    )
    assert len(lm_eval_names) == 45  # 4 sets + 11 EWoK domains, × 3 prompt types
    assert sorted(f"biasmonkey_{name}" for name in TASKS) == lm_eval_names
    top = [(" Yes", 0.3), ("Yes", 0.1), (" No", 0.2), ("No", 0.1)]  # yes .4 > no .3: every item answers Yes
    calls: list[str] = []
    model = scripted({"": counted(calls, "null", top)}, default=output("Yes", top))
    logs = inspect_eval(
        [f"biasmonkey/{name}" for name in TASKS], model=model, limit=1, log_dir=str(tmp_path / "logs"), display="none"
    )
    assert [log.status for log in logs] == ["success"] * 45
    assert calls == ["null"]  # one no-context request for the model, shared by the 45 tasks
    for log in logs:
        m = metrics(log)
        assert set(REPORTED) | {"imputed_continuations"} == set(m), log.eval.task
        assert m["n"] == 1 and m["imputed_continuations"] == 0 and m["bias"] == 1
    fewshot = next(log for log in logs if log.eval.task == "biasmonkey/yesno_ewok_physical_relations_fewshot")
    assert fewshot.samples[0].id == "ewok-physical_relations-1"
    assert fewshot.samples[0].input.startswith("#INSTRUCTIONS\n") and fewshot.samples[0].input.endswith("\nResponse:")


# ---------------------------------------------------------------------------- hf models


def test_hf_null_prompt_is_the_prefix_token_alone(tiny_model: Path, caplog: pytest.LogCaptureFixture) -> None:
    tok = AutoTokenizer.from_pretrained(tiny_model)  # GPT-2 style: BOS = EOS = <|endoftext|>
    assert hf_null_prompt(tok, lambda text: text) == "<|endoftext|>"  # raw prompt: exactly token 0

    # Under a chat template the model sees the template around it: the token text, with a warning.
    def chat(text: str) -> str:
        return tok.apply_chat_template([{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)

    with caplog.at_level(logging.WARNING):
        assert hf_null_prompt(tok, chat) == "<|endoftext|>"
    assert "not as the prefix token alone" in caplog.text

    # A tokenizer that adds BOS itself turns "" into the prefix token.
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 0)]
    )
    assert tok("").input_ids == [0] and hf_null_prompt(tok, lambda text: text) == ""


def test_inspect_cli_on_the_tiny_hf_model(tiny_model: Path, tmp_path: Path) -> None:
    inspect = Path(sys.executable).with_name("inspect")
    cmd = [
        str(inspect),
        "eval",
        "biasmonkey/yesno_comps_fewshot",
        "--model",
        f"hf/{tiny_model}",
        "-M",
        "device=cpu",
        "-T",
        "top_logprobs=5",
        "--limit",
        "3",
        "--log-dir",
        str(tmp_path / "logs"),
        "--display",
        "none",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(log_file)
    records = records_from_eval_log(log_file)
    assert [r.id for r in records] == ["comps-1", "comps-2", "comps-3"]
    assert len({(r.null_yes, r.null_no) for r in records}) == 1  # one no-context measurement
    # The tiny tokenizer splits "Yes" and "No" ("Y" "es", "N" "o"): first-token log-probs never hold them, so they
    # are always imputed. The no-context request reads the whole vocabulary: exactly those two are imputed there,
    # while the items' top 5 (of 986 tokens) lack at least those two.
    values = [s.scores["yesno_scorer"].value for s in log.samples]
    assert [v["n_imputed_null"] for v in values] == [2, 2, 2] and all(v["n_imputed"] >= 2 for v in values)
    assert metrics(log)["imputed_continuations"] == sum(v["n_imputed"] for v in values) + 2
    warnings = " ".join(e.message.message for s in log.samples for e in s.events if e.event == "logger")
    assert "['Yes', 'No'] are not single tokens" in warnings
    assert "reaches the model inside its chat template" in warnings  # the default (tiny) chat template
    assert log.samples[0].scores["yesno_scorer"].metadata["null_prompt"] == "<|endoftext|>"


@pytest.fixture(scope="module")
def yesno_tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with "Yes" and "No" also single tokens (a corpus line more), so that each of
    the four continuations is one token, as in real tokenizers (SmolLM2's, for one)."""
    import tiny_model

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tiny_model, "_CORPUS", [*tiny_model._CORPUS, "Yes\nNo"])
        path = tiny_model.build_tiny_model(tmp_path_factory.mktemp("tiny-yesno"))
    tok = AutoTokenizer.from_pretrained(path)
    assert [len(tok(c).input_ids) for c in (" Yes", "Yes", " No", "No")] == [1, 1, 1, 1]
    return path


def assert_parity(
    model: Path, tmp_path: Path, tasks: tuple[str, ...], limit: int, top_logprobs: int, tol: float
) -> None:
    """Inspect (hf/, raw prompt) and lm-eval (hf), both float64 with batch size 1, give the same
    per-item records (log-probabilities to `tol`, the same answers) and the same metrics (1e-6)."""
    logs = inspect_eval(
        [f"biasmonkey/{t}" for t in tasks],
        model=f"hf/{model}",
        model_args={"device": "cpu", "batch_size": 1, "dtype": "float64", **RAW_PROMPT},
        limit=limit,
        task_args={"top_logprobs": top_logprobs},
        log_dir=str(tmp_path / "inspect"),
        display="none",
    )
    assert [log.status for log in logs] == ["success"] * len(tasks)
    results, samples = run_lm_eval(
        model,
        tmp_path / "lm_eval",
        ",".join(f"biasmonkey_{t}" for t in tasks),
        "--limit",
        str(limit),
        batch_size=1,
        dtype="float64",
    )
    prefix = AutoTokenizer.from_pretrained(model).bos_token  # BOS = the prefix token for both models here
    for log in logs:
        task = log.eval.task.removeprefix("biasmonkey/")
        ours = records_from_eval_log(log.location)
        theirs: dict[str, ItemRecord] = {r.id: r for r in records_from_samples_file(samples[f"biasmonkey_{task}"])}
        assert [r.id for r in ours] == list(theirs) and len(ours) == limit
        for rec in ours:
            other = theirs[rec.id]
            assert rec.logprobs == pytest.approx(other.logprobs, abs=tol), rec.id
            assert rec.null_logprobs == pytest.approx(other.null_logprobs, abs=tol), rec.id
            assert (rec.yes > rec.no, rec.yes - rec.null_yes > rec.no - rec.null_no) == (
                other.yes > other.no,
                other.yes - other.null_yes > other.no - other.null_no,
            ), rec.id
        assert all(s.scores["yesno_scorer"].metadata["null_prompt"] == prefix for s in log.samples)
        assert not [e for s in log.samples for e in s.events if e.event == "logger"]  # no warning with the raw prompt
        m = metrics(log)
        assert m["imputed_continuations"] == 0
        for name in REPORTED:
            assert m[name] == pytest.approx(
                metric(results["results"][f"biasmonkey_{task}"], name), abs=1e-6, nan_ok=True
            ), name


def test_tiny_model_gives_the_same_records_in_both_harnesses(yesno_tiny_model: Path, tmp_path: Path) -> None:
    # Inspect's hf provider takes the log-softmax of float32 logits: one float32 step near −7 is 4.8e-7
    # (measured differences up to 5.4e-7), hence 2e-6 on the log-probabilities.
    vocab = len(AutoTokenizer.from_pretrained(yesno_tiny_model))
    assert_parity(
        yesno_tiny_model, tmp_path, ("yesno_comps", "yesno_ewok_fewshot"), limit=6, top_logprobs=vocab, tol=2e-6
    )


@pytest.mark.slow
@pytest.mark.requires("smollm2")
def test_smollm2_gives_the_same_records_in_both_harnesses(tmp_path: Path) -> None:
    """A real tokenizer (every continuation one token) and the default no-context prompt <|im_start|>.
    The few-shot EWoK prompt keeps all four continuations in the top 1000 (the zero-shot COMPS
    prompt does not: "Yes"/"No" without a space rank lower after a bare question). SmolLM2's larger
    logits make the float32 rounding larger: measured differences up to 9.4e-6, hence 5e-5."""
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    assert_parity(ensure_default_model(), tmp_path, ("yesno_ewok_fewshot",), limit=12, top_logprobs=1000, tol=5e-5)
