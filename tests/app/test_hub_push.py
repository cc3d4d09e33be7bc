"""`biasmonkey report --push-to-hub`: where the Benchmark dataset id comes from, the model's Hub id,
which report model goes to which repo, the dry run, and the upload through huggingface_hub's own
client against a local stand-in of the Hub's commit API (nothing leaves the machine). The
placeholder dataset id is never sent."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.default_model import DEFAULT_MODEL_HUB_ID, MARKER_FILE
from biasmonkey.harness_ext.app.report import hub
from biasmonkey.harness_ext.app.report.hub import (
    DATASET_ENV,
    PLACEHOLDER_DATASET,
    HubPushError,
    ReportEntry,
    choose_entry,
    configured_dataset,
    eval_result,
    model_hub_id,
    plan_upload,
    push,
    push_eval_results,
    report_entries,
)

DATASET = "someone/biasmonkey-bench"
REPO = "SomeOrg/some-model"
TOKEN = "hf_standin_token"


# ---------------------------------------------------------------------------- the dataset id


def test_dataset_id_from_option_then_variable_then_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "publish.yaml"
    config.write_text("dataset: from/file\n")
    monkeypatch.delenv(DATASET_ENV, raising=False)
    assert configured_dataset(None, config) == ("from/file", str(config))
    monkeypatch.setenv(DATASET_ENV, "from/env")
    assert configured_dataset(None, config) == ("from/env", f"${DATASET_ENV}")
    assert configured_dataset("from/option", config) == ("from/option", "--hub-dataset")
    monkeypatch.delenv(DATASET_ENV)
    assert configured_dataset(None, tmp_path / "absent.yaml") == (PLACEHOLDER_DATASET, "the default")
    monkeypatch.setenv(DATASET_ENV, "not an id")
    with pytest.raises(ValueError, match=rf"\${DATASET_ENV} 'not an id': expected a Hub dataset id OWNER/NAME"):
        configured_dataset(None, config)


def test_shipped_publish_config_names_a_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATASET_ENV, raising=False)
    dataset, where = configured_dataset()
    assert where == str(hub.PUBLISH_CONFIG) and hub.check_dataset_id(dataset) == dataset


def test_push_is_refused_while_the_id_is_the_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.delenv(DATASET_ENV, raising=False)
    monkeypatch.setattr(hub, "PUBLISH_CONFIG", tmp_path / "absent.yaml")
    out = tmp_path / "report"
    assert main(["report", str(tmp_path), "--out", str(out), "--push-to-hub", REPO, "--dry-run"]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()  # one line, no traceback
    assert f"placeholder {PLACEHOLDER_DATASET}" in err and "--hub-dataset OWNER/NAME" in err and DATASET_ENV in err
    assert not out.exists()  # refused before the report was written


@pytest.mark.parametrize("option", [["--dry-run"], ["--no-pr"], ["--push-model", "x"]])
def test_push_options_need_push_to_hub(tmp_path: Path, option: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "out"), *option]) == 2
    assert "only with --push-to-hub ORG/MODEL" in capsys.readouterr().err


def test_a_bad_repo_id_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path), "--out", str(tmp_path), "--push-to-hub", "no-owner"])
    assert "expected a Hub model id OWNER/NAME" in capsys.readouterr().err


# ---------------------------------------------------------------------------- the model's Hub id


def test_model_hub_id_from_the_runs_model_arguments(tmp_path: Path) -> None:
    folder = tmp_path / "some-local-model"
    folder.mkdir()
    default = tmp_path / "models" / "SmolLM2-135M-Instruct"
    default.mkdir(parents=True)
    (default / MARKER_FILE).write_text("{}")
    hf_id = "HuggingFaceTB/SmolLM2-135M-Instruct"
    cases: list[tuple[str, dict[str, Any], str | None]] = [
        # lm-eval's config block: the backend and its model_args (a string or a mapping)
        (hf_id, {"model": "hf", "model_args": f"pretrained={hf_id},dtype=float32"}, hf_id),
        (hf_id, {"model": "biasmonkey-hf", "model_args": {"pretrained": hf_id}}, hf_id),
        (str(folder), {"model": "hf", "model_args": f"pretrained={folder}"}, None),
        (str(default), {"model": "hf", "model_args": f"pretrained={default}"}, DEFAULT_MODEL_HUB_ID),
        ("./rel/path", {"model": "hf", "model_args": "pretrained=./rel/path"}, None),
        ("gpt2", {"model": "hf", "model_args": "pretrained=gpt2"}, None),  # not OWNER/NAME
        (hf_id, {"model": "local-completions", "model_args": f"model={hf_id},base_url=http://x"}, None),  # served
        # Inspect's model info, and the report's results-file config for an Inspect run
        (hf_id, {"model": f"hf/{hf_id}", "harness": "inspect"}, hf_id),
        (hf_id, {"model": f"vllm/{hf_id}"}, hf_id),
        ("openai/gpt-4o-mini", {"model": "openai/gpt-4o-mini"}, None),
        (hf_id, {"model": "hf", "model_args": {"model": f"hf/{hf_id}", "device": "cpu"}}, hf_id),
        (hf_id, {}, hf_id),
    ]
    for model, config, expected in cases:
        assert model_hub_id(model, config) == expected, (model, config)


def test_entries_use_huggingface_hubs_format_with_a_source() -> None:
    from huggingface_hub import parse_eval_result_entries

    data = eval_result(DATASET, "biasmonkey_acquiescence", 1.5, "2026-01-02T03:04:05Z", "lower = less biased")
    (entry,) = parse_eval_result_entries(data)
    assert (entry.dataset_id, entry.task_id, entry.value) == (DATASET, "biasmonkey_acquiescence", 1.5)
    assert entry.source_url == f"https://huggingface.co/datasets/{DATASET}" and entry.source_name
    assert list(data[0]) == ["dataset", "value", "date", "source", "notes"]


# ---------------------------------------------------------------------------- which model goes where


def write_entry_folder(
    root: Path, slug: str, name: str, config: dict[str, Any], dataset: str = DATASET, stamp: str = "2026-01-01T00-00-00"
) -> Path:
    """A leaderboard folder as the report writes it: the results file and two `.eval_results` entries."""
    folder = root / slug
    (folder / ".eval_results").mkdir(parents=True)
    model = config.get("model_args", {}).get("pretrained", name)
    results = {"config": {**config, "biasmonkey": {"report_name": name}}, "model_name": model}
    (folder / f"results_{stamp}.json").write_text(json.dumps(results))
    for task, value in (("biasmonkey_yesno_comps", 0.25), ("biasmonkey_acquiescence", 3.5)):
        data = eval_result(dataset, task, value, "2026-01-01T00:00:00Z", f"lower = less biased; model {model}")
        (folder / ".eval_results" / f"{task}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def hf_config(pretrained: str) -> dict[str, Any]:
    return {"model": "hf", "model_args": {"pretrained": pretrained}}


def test_the_model_whose_hub_id_is_the_repo_is_chosen(tmp_path: Path) -> None:
    write_entry_folder(tmp_path, "some-model", "some-model", hf_config(REPO))
    write_entry_folder(tmp_path, "other", "other", hf_config("SomeOrg/other"))
    entries = report_entries(tmp_path)
    assert [(e.name, e.hub_id) for e in entries] == [("other", "SomeOrg/other"), ("some-model", REPO)]
    assert choose_entry(entries, REPO).name == "some-model"
    with pytest.raises(ValueError, match="no model of this report is known as Org/third.*--push-model NAME"):
        choose_entry(entries, "Org/third")
    with pytest.raises(ValueError, match="'other' is SomeOrg/other, not Org/third; push it to SomeOrg/other"):
        choose_entry(entries, "Org/third", "other")
    with pytest.raises(ValueError, match="--push-model 'nope': not a model of this report"):
        choose_entry(entries, REPO, "nope")


def test_one_model_with_several_settings_needs_a_name(tmp_path: Path) -> None:
    write_entry_folder(tmp_path, "m_mode_exact", "m (mode=exact)", hf_config(REPO))
    write_entry_folder(tmp_path, "m_mode_sample", "m (mode=sample)", hf_config(REPO))
    entries = report_entries(tmp_path)
    with pytest.raises(ValueError, match=f"several models of this report are {REPO}"):
        choose_entry(entries, REPO)
    assert choose_entry(entries, REPO, "m (mode=sample)").folder.name == "m_mode_sample"
    assert choose_entry(entries, REPO, "m_mode_exact").name == "m (mode=exact)"  # the folder name works too


def test_a_lone_model_of_unknown_id_goes_to_the_repo_named(tmp_path: Path) -> None:
    write_entry_folder(tmp_path, "old", "old", hf_config(REPO), stamp="2025-01-01T00-00-00")  # an earlier report
    write_entry_folder(tmp_path, "local", "local", hf_config("/models/local"), stamp="2026-01-01T00-00-00")
    os.utime(tmp_path / "old" / "results_2025-01-01T00-00-00.json", (1e9, 1e9))  # written long before
    entries = report_entries(tmp_path)
    assert [e.name for e in entries] == ["local"]  # the earlier report's folder is not this report's
    assert choose_entry(entries, REPO).hub_id is None


def test_entries_naming_another_dataset_are_not_sent(tmp_path: Path) -> None:
    folder = write_entry_folder(tmp_path, "m", "m", hf_config(REPO), dataset=PLACEHOLDER_DATASET)
    entry = ReportEntry("m", folder, REPO, REPO)
    with pytest.raises(ValueError, match=f"names the dataset {PLACEHOLDER_DATASET}, not {DATASET}"):
        plan_upload(entry, REPO, DATASET)
    with pytest.raises(ValueError, match="placeholder"):
        plan_upload(entry, REPO, PLACEHOLDER_DATASET)


def test_dry_run_prints_repo_files_and_contents(tmp_path: Path) -> None:
    write_entry_folder(tmp_path, "some-model", "some-model", hf_config(REPO))
    lines: list[str] = []
    assert push_eval_results(tmp_path, REPO, DATASET, dry_run=True, api=ExplodingApi(), echo=lines.append) is None
    text = "\n".join(lines)
    assert lines[0].startswith("Dry run, nothing uploaded")
    assert f"would open a pull request on the model repo {REPO}" in text and "2 file(s)" in text
    assert "--- .eval_results/biasmonkey_acquiescence.yaml" in text and f"id: {DATASET}" in text
    lines.clear()
    push_eval_results(tmp_path, REPO, DATASET, dry_run=True, create_pr=False, echo=lines.append)
    assert "would commit directly to the main branch of the model repo" in "\n".join(lines)


class ExplodingApi:
    """An API object that must not be used."""

    token = TOKEN

    def create_commit(self, **kwargs: Any) -> None:
        raise AssertionError("a dry run uploaded")


# ---------------------------------------------------------------------------- the upload, against a stand-in Hub


@pytest.fixture
def stand_in_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A local HTTP server answering the two calls of `HfApi.create_commit` for small files (preupload,
    commit), for the repo REPO only; it records every request. Offline mode (set for the tests) is lifted."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    state = SimpleNamespace(requests=[], status=None)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            url = urlparse(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.requests.append(
                SimpleNamespace(
                    path=url.path,
                    query=parse_qs(url.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            prefix = f"/api/models/{REPO}/"
            if state.status is not None:
                self.reply(state.status, {"error": "Forbidden"}, {"X-Error-Message": "You may not write here"})
            elif not url.path.startswith(prefix):
                self.reply(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            elif url.path == prefix + "preupload/main":
                files = json.loads(body)["files"]
                self.reply(
                    200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}
                )
            elif url.path == prefix + "commit/main":
                base = f"http://127.0.0.1:{self.server.server_address[1]}/{REPO}"
                self.reply(
                    200,
                    {
                        "commitUrl": f"{base}/commit/{'a' * 40}",
                        "commitOid": "a" * 40,
                        "pullRequestUrl": f"{base}/discussions/7",
                    },
                )
            else:
                self.reply(404, {"error": "no such endpoint"})

        def reply(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def committed_files(request: SimpleNamespace) -> dict[str, str]:
    lines = [json.loads(line) for line in request.body.decode().splitlines()]
    return {
        line["value"]["path"]: base64.b64decode(line["value"]["content"]).decode()
        for line in lines
        if line["key"] == "file"
    }


def api_for(hub_state: SimpleNamespace) -> Any:
    from huggingface_hub import HfApi

    return HfApi(endpoint=hub_state.url, token=TOKEN)


def test_upload_opens_a_pull_request_with_the_files(tmp_path: Path, stand_in_hub: SimpleNamespace) -> None:
    folder = write_entry_folder(tmp_path, "some-model", "some-model", hf_config(REPO))
    lines: list[str] = []
    url = push_eval_results(tmp_path, REPO, DATASET, api=api_for(stand_in_hub), echo=lines.append)
    assert url == f"{stand_in_hub.url}/{REPO}/discussions/7" and "Opened a pull request" in lines[-1]
    preupload, commit = stand_in_hub.requests
    assert preupload.path == f"/api/models/{REPO}/preupload/main" and preupload.query == {"create_pr": ["1"]}
    assert commit.path == f"/api/models/{REPO}/commit/main" and commit.query == {"create_pr": ["1"]}
    assert commit.headers["authorization"] == f"Bearer {TOKEN}"
    sent = committed_files(commit)
    local = {f".eval_results/{p.name}": p.read_text() for p in (folder / ".eval_results").glob("*.yaml")}
    assert sent == local and len(sent) == 2  # the files as the report wrote them, nothing else
    header = json.loads(commit.body.decode().splitlines()[0])
    assert header["key"] == "header" and "biasmonkey" in header["value"]["summary"]
    assert all(PLACEHOLDER_DATASET.encode() not in r.body for r in stand_in_hub.requests)


def test_upload_can_commit_directly(tmp_path: Path, stand_in_hub: SimpleNamespace) -> None:
    write_entry_folder(tmp_path, "some-model", "some-model", hf_config(REPO))
    url = push_eval_results(tmp_path, REPO, DATASET, create_pr=False, api=api_for(stand_in_hub), echo=print)
    assert url == f"{stand_in_hub.url}/{REPO}/commit/{'a' * 40}"
    assert all(r.query == {} for r in stand_in_hub.requests)


def test_errors_are_one_line(tmp_path: Path, stand_in_hub: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    write_entry_folder(tmp_path, "other", "other", hf_config("SomeOrg/missing"))
    with pytest.raises(HubPushError, match="model repo SomeOrg/missing not found on the Hub") as err:
        push_eval_results(tmp_path, "SomeOrg/missing", DATASET, api=api_for(stand_in_hub))
    assert "\n" not in str(err.value)

    stand_in_hub.status = 403
    folder = write_entry_folder(tmp_path / "b", "some-model", "some-model", hf_config(REPO))
    upload = plan_upload(ReportEntry("some-model", folder, REPO, REPO), REPO, DATASET, create_pr=False)
    with pytest.raises(HubPushError, match=r"refused the upload to .* \(HTTP 403\): .*write access.*--no-pr"):
        push(upload, api=api_for(stand_in_hub))

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(HubPushError, match="no Hugging Face token: log in with `hf auth login` or set HF_TOKEN"):
        push(upload, api=huggingface_hub.HfApi(endpoint=stand_in_hub.url))

    class Unreachable:
        token, endpoint = TOKEN, "https://hub.invalid"

        def create_commit(self, **kwargs: Any) -> None:
            raise ConnectionError("[Errno -2] Name or service not known\n  (more lines)")

    with pytest.raises(HubPushError) as err:
        push(upload, api=Unreachable())
    assert str(err.value) == (
        f"could not upload to {REPO} at https://hub.invalid: ConnectionError: [Errno -2] Name or service not known "
        "(more lines)"
    )


def test_offline_mode_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants
    from huggingface_hub import HfApi

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    folder = write_entry_folder(tmp_path, "some-model", "some-model", hf_config(REPO))
    upload = plan_upload(ReportEntry("some-model", folder, REPO, REPO), REPO, DATASET)
    with pytest.raises(HubPushError, match="could not upload .*offline mode is enabled.*HF_HUB_OFFLINE"):
        push(upload, api=HfApi(endpoint="http://127.0.0.1:9", token=TOKEN))


# ---------------------------------------------------------------------------- end to end: report, then push


@pytest.fixture(scope="module")
def inspect_logs(tiny_model: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model (a local folder: its Hub id is unknown) on one yes-no task through Inspect."""
    from test_report_e2e import inspect_run

    logs = tmp_path_factory.mktemp("push") / "inspect"
    mp = pytest.MonkeyPatch()
    mp.setenv("BIASMONKEY_DATA_DIR", str(data_dir))
    try:
        inspect_run(tiny_model, ["biasmonkey/yesno_comps"], logs, 3)
    finally:
        mp.undo()
    return logs


def test_report_then_dry_run_then_push(
    inspect_logs: Path,
    tmp_path: Path,
    stand_in_hub: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", stand_in_hub.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv(DATASET_ENV, DATASET)  # the configured id, no option needed
    out = tmp_path / "report"
    args = ["report", str(inspect_logs), "--out", str(out), "--push-to-hub", REPO]
    assert main([*args, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    (written,) = (out / "leaderboard").glob("*/.eval_results/biasmonkey_yesno_comps.yaml")
    assert stand_in_hub.requests == []  # the dry run sent nothing
    assert f"would open a pull request on the model repo {REPO}" in printed
    assert written.read_text().rstrip("\n") in printed  # the file's contents, as they would be sent
    (entry,) = yaml.safe_load(written.read_text())
    assert entry["dataset"] == {"id": DATASET, "task_id": "biasmonkey_yesno_comps"}
    assert entry["source"]["url"] == f"https://huggingface.co/datasets/{DATASET}"

    assert main(args) == 0
    assert "Opened a pull request with 1 .eval_results file(s)" in capsys.readouterr().out
    preupload, commit = stand_in_hub.requests
    assert committed_files(commit) == {".eval_results/biasmonkey_yesno_comps.yaml": written.read_text()}
    assert commit.query == {"create_pr": ["1"]} and PLACEHOLDER_DATASET.encode() not in commit.body


def test_report_push_to_a_missing_repo_fails_in_one_line(
    inspect_logs: Path,
    tmp_path: Path,
    stand_in_hub: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", stand_in_hub.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    argv = ["report", str(inspect_logs), "--out", str(tmp_path), "--hub-dataset", DATASET, "--push-to-hub", "A/b"]
    assert main(argv) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("biasmonkey: error: model repo A/b not found on the Hub")
    assert (tmp_path / "report.md").is_file()  # the report is written all the same
