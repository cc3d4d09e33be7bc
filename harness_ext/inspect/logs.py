"""Reading finished Inspect logs into plain `LoggedScore`s (the family codecs make records of them)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.scorer import Score, mean_score

from biasmonkey.tasks.contract import LoggedScore
from biasmonkey.tasks.samples_check import times


def read_finished_log(path: str | Path) -> EvalLog:
    """An Inspect log (`.eval` or `.json`) of a completed eval that kept its samples, none of them failed."""
    log = read_eval_log(str(path))
    if log.status != "success":
        reason = f": {log.error.message.strip().splitlines()[-1]}" if log.error else ""
        raise ValueError(
            f"{path}: the eval did not complete (status {log.status}{reason}); resume it with "
            f"`inspect eval-retry {path}`, or move it out of the folder"
        )
    if not log.samples:
        raise ValueError(f"{path}: the log holds no samples (was it written with --no-log-samples?)")
    check_failed(path, log)
    check_samples(path, log)
    return log


CHANGED = "the log was changed after the run: rerun the task, or restore the log as Inspect wrote it"


def check_failed(path: str | Path, log: EvalLog) -> None:
    """No failed sample: a run with `--no-fail-on-error` completes without them, and the metrics
    over the other samples would stand on fewer items than the task's, with nothing to say so."""
    failed = [s for s in log.samples or [] if s.error is not None]
    if failed:
        first = failed[0]
        message = (first.error.message.strip().splitlines() or [""])[0]
        raise ValueError(
            f"{path}: {len(failed)} of {len(log.samples or [])} samples failed (first: sample {first.id!r} "
            f"epoch {first.epoch}: {message[:300]}); rerun them with `inspect eval-retry {path}`"
        )


def check_samples(path: str | Path, log: EvalLog) -> None:
    """The samples of a finished log against its header: each (id, epoch) once, and as many
    samples without error as the header's results say completed."""
    samples = log.samples or []
    seen = Counter((s.id, s.epoch) for s in samples)
    repeats = [f"sample {sid!r} epoch {epoch} {times(n)}" for (sid, epoch), n in seen.items() if n > 1]
    completed = sum(1 for s in samples if s.error is None)
    said = log.results.completed_samples if log.results else completed
    if completed != said or repeats:
        total = log.results.total_samples if log.results else len(samples)
        detail = f": {'; '.join(repeats)}" if repeats else ""
        raise ValueError(
            f"{path}: {completed} completed samples for {log.eval.task} but its header says {said} "
            f"(of {total} in all){detail}; {CHANGED}"
        )


def _score(path: str | Path, sample: EvalSample, scorer: str) -> Score:
    score = (sample.scores or {}).get(scorer)
    if score is None:
        raise ValueError(f"{path}: sample {sample.id!r} epoch {sample.epoch} has no {scorer} score; {CHANGED}")
    return score


def logged_scores(path: str | Path, scorer: str, per_epoch: bool = False) -> list[LoggedScore]:
    """One `scorer` score per sample of a finished log, in the task's order, with the sample's
    metadata: the mean of its epochs' scores key by key (what `--epochs-reducer mean`, the tasks'
    default, logs), or (per_epoch) every epoch's score with its own metadata, in the log's order.

    The mean is taken here from the epochs' scores, whatever reducer the run was given: another
    reducer (`max`, `median`, …) reduces each key on its own, so that its "reduced" answer counts
    or log-probabilities belong to no answer the model gave (docs/inspect.md)."""
    log = read_finished_log(path)
    samples = log.samples or []
    if per_epoch:
        return [
            LoggedScore(s.id, (score := _score(path, s, scorer)).value, score.metadata, s.metadata or {})
            for s in samples
        ]
    epochs: dict[str | int, list[EvalSample]] = {}
    for sample in samples:
        epochs.setdefault(sample.id, []).append(sample)
    dataset_order = {sid: i for i, sid in enumerate(log.eval.dataset.sample_ids or [])}
    mean = mean_score()  # Inspect's own reducer: the same numbers as a log reduced with it
    logged = []
    for sample_id in sorted(epochs, key=lambda sid: dataset_order.get(sid, len(dataset_order))):
        its_epochs = epochs[sample_id]
        scores = [_score(path, s, scorer) for s in its_epochs]
        logged.append(LoggedScore(sample_id, mean(scores).value, scores[0].metadata, its_epochs[0].metadata or {}))
    return logged
