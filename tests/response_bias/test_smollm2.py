"""Realism checks on the bundled SmolLM2-135M-Instruct through the stock lm_eval CLI."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from inspect_ai.log import read_eval_log
from test_inspect_parity import assert_parity, inspect_records, lm_eval_records
from test_lm_eval_e2e import REPO, assert_recomputes, metric, run_lm_eval
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.app.default_model import ensure_default_model
from biasmonkey.harness_ext.logs import scan
from biasmonkey.metrics import distribution_from_counts, pair_delta
from biasmonkey.metrics.top_logprobs import spaced_token
from biasmonkey.tasks.response_bias.prompts import answer_continuations, render_prompt

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("data_dir"),
    pytest.mark.requires("smollm2"),
]


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return ensure_default_model()


def test_exact_mode_matches_a_plain_transformers_forward(smollm2: Path, tmp_path: Path) -> None:
    tasks = "biasmonkey_response_order,biasmonkey_acquiescence_key_typo"
    results, samples = run_lm_eval(smollm2, tmp_path / "out", tasks, "--limit", "6")
    for task in tasks.split(","):
        records = assert_recomputes(results["results"][task], samples[task], 6)
        # A real instruct model is far from indifferent between the options.
        assert metric(results["results"][task], "uncertainty_q") < 0.9
        assert all(r.delta is not None for r in records)

    # The option distribution lm-eval produced equals one forward pass of transformers.
    sample = json.loads(samples["biasmonkey_response_order"].read_text().splitlines()[0])
    doc = sample["doc"]
    tok = AutoTokenizer.from_pretrained(smollm2)
    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32)
    ids = tok(render_prompt(doc["q"]), return_tensors="pt").input_ids
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, -1], dim=-1)
    continuations = answer_continuations(doc["q_letters"])  # " A", "A", " B", "B", …
    token_ids = [tok(c, add_special_tokens=False).input_ids for c in continuations]
    assert all(len(i) == 1 for i in token_ids)
    expected = [logprobs[i[0]].item() for i in token_ids]
    logged = [float(r[0]) for r in sample["filtered_resps"][: len(continuations)]]
    assert logged == pytest.approx(expected, abs=1e-4)


def test_sampling_mode_counts_the_invalid_answers(smollm2: Path, tmp_path: Path) -> None:
    """With the paper's raw prompt SmolLM2 mostly ends its turn: those answers are counted."""
    results, samples = run_lm_eval(
        smollm2,
        tmp_path / "out",
        "biasmonkey_response_order",
        "--limit",
        "2",
        "--metadata",
        '{"mode": "sample", "n_samples": 10}',
    )
    task_results = results["results"]["biasmonkey_response_order"]
    records = assert_recomputes(task_results, samples["biasmonkey_response_order"], 2)
    assert sum(r.n_answers for r in records) == 40
    assert 0 < metric(task_results, "invalid_rate") < 1


@pytest.mark.parametrize("chat", [False, True], ids=["raw-prompt", "chat-template"])
def test_inspect_and_lm_eval_give_the_same_records(smollm2: Path, tmp_path: Path, chat: bool) -> None:
    """Parity on a real instruct model, with and without its chat template (see
    test_inspect_parity for the tolerance under the chat template)."""
    limit = 3
    assert_parity(
        inspect_records(smollm2, tmp_path / "inspect", limit, raw_prompt=not chat),
        lm_eval_records(smollm2, tmp_path / "lm_eval", limit, chat=chat),
        limit,
        tol=1e-3 if chat else 1e-4,
    )


def readme_commands(section: str = "## Running it on your models") -> dict[str, str]:
    """The README's `lm_eval` and `inspect eval` commands of a section, continuation lines joined."""
    text = (REPO / "README.md").read_text()
    block = text[text.index(section) :].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = block.replace("\\\n", " ").splitlines()
    return {
        line.split()[0]: " ".join(line.split("#")[0].split())
        for line in lines
        if line.startswith(("lm_eval ", "inspect "))
    }


def test_the_readme_commands_give_one_number_in_both_harnesses(smollm2: Path, tmp_path: Path) -> None:
    """The README's lm_eval and inspect eval commands, as written (SmolLM2-135M standing in for the
    hub id, one task, --limit 5 in both), give the same per-pair records and the same run settings."""
    commands = readme_commands()
    hub_id = "HuggingFaceTB/SmolLM2-360M-Instruct"
    assert hub_id in commands["lm_eval"] and hub_id in commands["inspect"]
    lm_eval = (
        commands["lm_eval"]
        .replace(hub_id, str(smollm2))
        .replace("--tasks biasmonkey ", "--tasks biasmonkey_acquiescence ")
    )
    inspect = commands["inspect"].replace(hub_id, str(smollm2))
    assert "biasmonkey/acquiescence" in inspect and "biasmonkey_acquiescence" in lm_eval
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", HF_HUB_OFFLINE="1")
    for command in (lm_eval, inspect):
        done = subprocess.run(
            ["bash", "-c", f"{command} --limit 5"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    (lm_out,) = [o for o in scan(tmp_path / "results") if o.task == "acquiescence"]
    (inspect_out,) = scan(tmp_path / "logs")
    # one model, one prompt format; Inspect's top_logprobs (how many alternatives it asks for) is its own option
    assert lm_out.run.model == inspect_out.run.model
    assert dict(inspect_out.settings) == dict(lm_out.settings) | {"top_logprobs": "100"}
    assert "apply_chat_template" not in dict(inspect_out.settings)
    ours = {r.key: r for r in inspect_out.read_records()}
    theirs = lm_out.read_records()
    assert len(theirs) == len(ours) == 5 and {r.key for r in theirs} == set(ours)
    # What Inspect read is lm-eval's numbers but for the spellings outside its top 100: SmolLM2's
    # bare letters ("A", ranked ~700th to ~2,600th after the raw prompt), each given the documented
    # floor and counted. Recomputed from lm-eval's log-likelihood of every spelling, with the floor
    # for those missing from Inspect's top-100 list: float32, and Inspect's hf/ provider batches
    # concurrent prompts (padded) where lm-eval runs them one by one, so Δ agrees to a few
    # hundredths of a point (measured: 0.018 at most).
    top_k = {s.id: s.store for s in read_eval_log(inspect_out.path).samples}
    logged = {json.loads(line)["doc"]["key"]: json.loads(line) for line in lm_out.path.read_text().splitlines()}
    imputed = 0
    for rec in theirs:
        doc, results = logged[rec.key]["doc"], [float(r[0]) for r in logged[rec.key]["filtered_resps"]]
        sides, n_missing = [], 0
        for side in ("q", "qp"):
            spellings = answer_continuations(doc[f"{side}_letters"])
            exact, results = results[: len(spellings)], results[len(spellings) :]
            top = top_k[rec.key][f"{side}_top_logprobs"]
            returned = {spaced_token(token) for token, _ in top}
            missing = [s not in returned for s in spellings]
            # floor: min(smallest returned probability, unreturned mass / missing spellings)
            floor = min(
                math.exp(min(lp for _, lp in top)), (1 - sum(math.exp(lp) for _, lp in top)) / max(sum(missing), 1)
            )
            probs = [floor if gone else math.exp(lp) for gone, lp in zip(missing, exact)]
            # a missing spelling is one lm-eval scores below every returned token
            assert all(lp <= min(v for _, v in top) + 1e-4 for gone, lp in zip(missing, exact) if gone)
            sides.append(distribution_from_counts([probs[i] + probs[i + 1] for i in range(0, len(probs), 2)]))
            n_missing += sum(missing)
        assert ours[rec.key].n_imputed == n_missing, rec.key
        expected = pair_delta(doc["bias"], doc["setting"], *sides, doc["qp_positions"])
        assert ours[rec.key].delta == pytest.approx(expected, abs=0.05), rec.key
        imputed += n_missing
    assert imputed > 0  # the README says so: top_logprobs=100 leaves SmolLM2's bare letters out
