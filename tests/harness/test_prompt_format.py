"""The prompt format (raw prompt or chat template) is a setting of every run, read alike from both harnesses."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from test_lm_eval_e2e import run_lm_eval

from biasmonkey.harness_ext.logs import inspect_prompt_format, passes_prompt_through, scan

pytestmark = pytest.mark.usefixtures("data_dir")
RAW = "{{ messages[0].content }}"


def test_a_template_passes_the_prompt_through_only_when_it_renders_the_text_alone() -> None:
    assert passes_prompt_through(RAW) and passes_prompt_through("{{ messages[0]['content'] }}")
    assert not passes_prompt_through("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}")
    assert not passes_prompt_through(" {{ messages[0].content }}")  # one character more is another prompt
    assert not passes_prompt_through("{{ broken")  # not a template
    assert not passes_prompt_through(None)


@pytest.mark.parametrize(
    ("model", "args", "expected"),
    [
        ("hf/org/m", {"chat_template": RAW}, {}),
        ("vllm/org/m", {"chat_template": RAW}, {}),
        ("hf/org/m", {}, {"apply_chat_template": True}),  # the provider applies the model's template
        ("hf/org/m", {"use_chat_template": False}, {"apply_chat_template": "role_prefix"}),
        ("openai/gpt-4o-mini", {"chat_template": RAW}, {"apply_chat_template": True}),  # a chat API
    ],
)
def test_the_prompt_format_of_an_inspect_model(model: str, args: dict, expected: dict) -> None:
    assert inspect_prompt_format(model, args) == expected


@pytest.mark.slow  # real `biasmonkey run`s / harness runs: after the fast tests
def test_raw_and_chat_runs_are_two_settings_and_lm_eval_names_them_alike(tiny_model: Path, tmp_path: Path) -> None:
    task = "biasmonkey/acquiescence"
    for name, args in (("raw", {"chat_template": RAW}), ("chat", {})):
        (log,) = inspect_eval(
            task,
            model=f"hf/{tiny_model}",
            model_args={"dtype": "float32", **args},
            limit=2,
            log_dir=str(tmp_path / name),
            display="none",
        )
        assert log.status == "success"
    run_lm_eval(tiny_model, tmp_path / "lm_raw", "biasmonkey_acquiescence", "--limit", "2")
    run_lm_eval(
        tiny_model,
        tmp_path / "lm_chat",
        "biasmonkey_acquiescence",
        "--limit",
        "2",
        "--apply_chat_template",
    )
    runs = {name: scan(tmp_path / name)[0].run for name in ("raw", "chat", "lm_raw", "lm_chat")}
    assert runs["raw"] == runs["lm_raw"] and runs["chat"] == runs["lm_chat"]
    assert runs["raw"] != runs["chat"]
    assert dict(runs["chat"].settings)["apply_chat_template"] == "true"
    assert "apply_chat_template" not in dict(runs["raw"].settings)
