"""`biasmonkey plan`: requests as lm-eval builds them, counted per task and backend without a model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.plan import BACKENDS, SUITES, build_requests, simple_counts
from biasmonkey.tasks.families import FAMILIES
from biasmonkey.tasks.response_bias.family import FAMILY as RESPONSE_BIAS
from biasmonkey.tasks.response_bias.prompts import render_prompt

COGNITIVE_TESTS = Path(__file__).parent.parent / "fixtures" / "cognitive" / "tests.csv"


def plan(capsys: pytest.CaptureFixture, *argv: str) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def plan_text(capsys: pytest.CaptureFixture, *argv: str) -> str:
    assert main(["plan", *argv]) == 0
    return capsys.readouterr().out


def costs(row: dict) -> dict[str, tuple[int | None, int | None]]:
    return {name: (c["sequences"], c["prompt_tokens"]) for name, c in row["backends"].items()}


def test_odd_even_limit_2_by_hand(tiny_model: Path, data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = plan(capsys, "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "2")
    task, total = out["rows"]
    assert task["task"] == "biasmonkey_odd_even" and total["task"] == "total"
    # Per pair: q has 5 options, q' 4, each letter scored with and without a leading space: 10 + 8 requests.
    assert (task["documents"], task["requests"], task["distinct_prompts"]) == (2, 36, 4)

    # The same counts by hand, from the documents and the tokenizer alone.
    options = RESPONSE_BIAS.options_type()
    pairs = RESPONSE_BIAS.docs(options, bias="odd_even", setting="bias")[:2]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    sides = [
        (render_prompt(pair[side], options.template), 2 * len(pair[f"{side}_letters"]))
        for pair in pairs
        for side in ("q", "qp")
    ]
    assert [n for _, n in sides] == [10, 8, 10, 8]
    lengths = [len(tokenizer.encode(prompt)) for prompt, _ in sides]
    context_tokens = sum(lengths)
    # The distinct prompts' trie tokens: their distinct non-empty prefixes (q and q' share the template's start).
    encoded = [tuple(tokenizer.encode(prompt)) for prompt, _ in sides]
    trie = len({e[:j] for e in encoded for j in range(1, len(e) + 1)})
    assert (task["prompt_tokens"], task["trie_tokens"]) == (context_tokens, trie) and trie < context_tokens
    # Every label is one token: stock hf groups all of a context's requests into one sequence.
    assert costs(task)["hf"] == (4, context_tokens)
    assert costs(task)["biasmonkey-hf"] == (4, trie)  # each shared prefix once
    assert costs(task)["biasmonkey-server"] == (4, context_tokens)
    assert costs(task)["server-prefix-cache"] == (4, trie)
    assert costs(task)["inspect"] == (4, context_tokens)  # one request per side
    # vllm & co.: one full sequence per request, context + one-token continuation − 1 = the context.
    assert costs(task)["vllm"] == (36, sum(length * n for length, (_, n) in zip(lengths, sides)))
    assert costs(total) == costs(task)
    assert set(out["backends"]) == set(BACKENDS)
    table = plan_text(capsys, "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "2")
    assert "trie tokens" in table and f"{context_tokens / trie:.2f}× their trie tokens" in table


def test_prompts_shared_between_tasks_count_once_in_the_total(
    tiny_model: Path, data_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    out = plan(
        capsys,
        "--model",
        str(tiny_model),
        "--tasks",
        "biasmonkey_odd_even,biasmonkey_odd_even_key_typo",
        "--limit",
        "2",
        "--backend",
        "hf,biasmonkey-hf,vllm,inspect",
    )
    bias, typo, total = out["rows"]
    # Both tasks ask the same two original questions q; their q' differ (4 options vs the typo'd q).
    assert bias["distinct_prompts"] == typo["distinct_prompts"] == 4 and total["distinct_prompts"] == 6
    assert total["documents"] == 4 and total["requests"] == bias["requests"] + typo["requests"]
    # lm-eval batches all tasks' requests: a shared prompt is one sequence; Inspect runs each task alone.
    assert costs(total)["hf"][0] == costs(total)["biasmonkey-hf"][0] == 6
    assert costs(total)["vllm"][0] == total["requests"]
    assert costs(total)["inspect"][0] == 8
    assert set(total["backends"]) == {"hf", "biasmonkey-hf", "vllm", "inspect"}


def test_multi_token_labels_cost_stock_backends_a_sequence_each(
    tiny_model: Path, capsys: pytest.CaptureFixture
) -> None:
    out = plan(
        capsys,
        "--model",
        str(tiny_model),
        "--tasks",
        "biasmonkey_cognitive_anchoring",
        "--limit",
        "1",
        "--data-path",
        str(COGNITIVE_TESTS),
    )
    task = out["rows"][0]
    # One test: control and treatment, each scored on its 11 labels "Option 1:" … "Option 11:".
    assert (task["documents"], task["requests"], task["distinct_prompts"]) == (1, 22, 2)
    c = costs(task)
    assert c["hf"][0] == c["vllm"][0] == 22  # no two labels share context + all-but-last tokens
    assert c["biasmonkey-hf"][0] == 2
    # the server: one echoed sequence per label, context + every label token (vllm: all but the last)
    assert c["biasmonkey-server"] == (22, c["vllm"][1] + 22)
    # ours: each distinct prefix once (the labels' shared " Option" among them); stock: the context again per label
    assert c["biasmonkey-hf"][1] < c["hf"][1] / 5
    assert c["biasmonkey-hf"][1] <= task["trie_tokens"] + 11 * 3  # the contexts' trie, then a few label tokens
    assert c["inspect"] == (None, None)  # exact mode of the cognitive tasks is lm-eval only


def test_sample_mode_counts_every_draw(tiny_model: Path, data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    out = plan(
        capsys,
        "--model",
        str(tiny_model),
        "--tasks",
        "biasmonkey_acquiescence",
        "--limit",
        "1",
        "--mode",
        "sample",
        "--n-samples",
        "3",
    )
    task = out["rows"][0]
    assert (task["documents"], task["requests"], task["distinct_prompts"]) == (1, 6, 2)
    assert {seq for seq, _ in costs(task).values()} == {6}  # one generation per draw, on every backend
    assert out["options"] == {"mode": "sample", "n_samples": 3}


def test_yesno_no_context_requests_share_one_sequence(
    tiny_model: Path, data_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    out = plan(capsys, "--model", str(tiny_model), "--tasks", "biasmonkey_yesno_comps", "--limit", "2")
    task = out["rows"][0]
    # Per question: 4 continuations after the prompt, 4 after an empty context (the prefix token).
    assert (task["documents"], task["requests"], task["distinct_prompts"]) == (2, 16, 3)
    assert costs(task)["biasmonkey-hf"][0] == 3 and costs(task)["vllm"][0] == 16
    assert costs(task)["inspect"][0] == 3  # one per question + the no-context request


def test_plan_loads_no_model_weights(
    tiny_model: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import transformers

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("plan loaded model weights")

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", refuse)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    # Default tokenizer: the bundled model's folder (here the tiny model stands in for it).
    from biasmonkey.harness_ext.app import default_model

    monkeypatch.setattr(default_model, "ensure_default_model", lambda log=print: tiny_model)
    assert main(["plan", "--tasks", "biasmonkey_allow_forbid", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert f"tokenizer {tiny_model.name}" in out
    assert "biasmonkey_allow_forbid" in out and "total" in out and "biasmonkey-hf" in out


def test_suites_name_the_groups_and_tags_of_the_task_files() -> None:
    tasks = Path(__file__).resolve().parents[2] / "tasks"
    for family in FAMILIES.values():
        if not family.suite:  # an open task table (the wrapped multiple-choice tasks): no suite to run
            assert family.name not in SUITES and not family.tasks
            continue
        text = "".join(p.read_text() for p in (tasks / family.name).glob("*.yaml"))
        # the suite is a group file of the family, or a tag its task files carry
        assert f"group: {family.suite}\n" in text or re.search(rf"tag: \[([^\]]*, )?{family.suite}[,\]]", text), (
            family.name
        )
        assert SUITES[family.name] == family.suite
    assert SUITES["all"] == ",".join(f.suite for f in FAMILIES.values() if f.suite)
    assert SUITES["all"].startswith("biasmonkey,biasmonkey-yesno,biasmonkey-cognitive")


def test_requests_are_lm_evals_own(data_dir: Path) -> None:
    """Counting without a tokenizer (what `run` prints): the tasks' own Instances, documents by doc_id."""
    tasks = build_requests("biasmonkey_allow_forbid", {"allow_forbid_all": True}, limit=3)
    (task,) = tasks
    assert task.family == "response_bias" and task.options.allow_forbid_all
    assert simple_counts(tasks) == (3, len(task.requests), len({r.context for r in task.requests}))
    assert all(r.continuation in {" A", "A", " B", "B"} for r in task.requests)


def test_bad_option_is_a_clear_error(tiny_model: Path, data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["plan", "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--template", "extended"])
    assert code == 2
    assert "option template='extended'" in capsys.readouterr().err


def test_calibration_turns_prompt_tokens_into_time(tiny_model: Path, data_dir: Path, capsys) -> None:
    out = plan(capsys, "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "2", "--calibrate")
    calibration, total = out["calibration"], out["rows"][-1]
    assert calibration["seconds_per_token"] > 0 and calibration["prompts"] == 4  # all four distinct prompts
    assert calibration["tokens"] == total["prompt_tokens"] and calibration["rounds"] == 3
    assert calibration["dtype"] == "float32" and calibration["device"] == "cpu"
    for backend, seconds in out["estimated_seconds"].items():
        tokens = total["backends"][backend]["prompt_tokens"]
        assert seconds == pytest.approx(tokens * calibration["seconds_per_token"])


def test_calibration_samples_prompts_across_their_lengths() -> None:
    from biasmonkey.harness_ext.app.calibrate import sample_prompts

    contexts = [tuple(range(n)) for n in range(1, 11)] + [(0,)]  # 10 distinct lengths, one repeated prompt
    assert [len(p) for p in sample_prompts(contexts, 4)] == [1, 4, 7, 10]
    assert len(sample_prompts(contexts, 20)) == 10


@pytest.mark.parametrize("add_bos_token", [False, True])
def test_batched_encoding_gives_lm_evals_tokens(tiny_model: Path, data_dir: Path, add_bos_token: bool) -> None:
    """`encode` tokenises every distinct string in batches first (`prefill`): the same tokens as
    lm-eval's HF backend one call at a time, on requests of three families (the yes-no set's
    no-context requests among them), a generation and contexts that start with the BOS text, which
    lm-eval encodes without special tokens: with a tokenizer that adds BOS, two kinds of `encode`
    call in one batch."""
    from biasmonkey.harness_ext.app.plan import Request, TaskRequests, _tokenizer_lm, encode

    tasks = build_requests(
        "biasmonkey_odd_even,biasmonkey_yesno_comps,biasmonkey_answer_position_anatomy_fewshot", {}, limit=2
    )
    tokenizer = AutoTokenizer.from_pretrained(tiny_model, add_bos_token=add_bos_token)
    bos = tokenizer.decode(tokenizer.bos_token_id)
    extra = [Request(0, "Say yes.", None, max_gen_toks=8), Request(1, f"{bos}Is it? ", "yes"), Request(1, bos, " no")]
    tasks.append(TaskRequests("extra", None, None, extra))
    assert any(r.context == "" for t in tasks for r in t.requests)  # the yes-no set's no-context requests

    batched, one_by_one = _tokenizer_lm(tokenizer), _tokenizer_lm(tokenizer)
    assert encode(tasks, batched) == encode(tasks, one_by_one, batched=False)
    assert batched._encoded == one_by_one._encoded  # the same distinct strings, each encoded once
    plain = "Say yes."
    assert batched._encoded[(plain, None, None)] == [tokenizer.bos_token_id] * add_bos_token + tokenizer.encode(
        plain, add_special_tokens=False
    )
    special = [key[0] for key in batched._encoded if key[0].startswith(bos)]
    assert len(special) >= 2
    assert all(batched._encoded[(s, None, None)] == tokenizer.encode(s, add_special_tokens=False) for s in special)
