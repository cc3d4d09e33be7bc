"""Reading finished Inspect logs into plain `LoggedScore`s (the family codecs make records of them)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from inspect_ai.log import EvalLog, read_eval_log

from biasmonkey.tasks.contract import LoggedScore
from biasmonkey.tasks.samples_check import times


def read_finished_log(path: str | Path) -> EvalLog:
    """An Inspect log (`.eval` or `.json`) of a completed eval that kept its samples."""
    log = read_eval_log(str(path))
    if log.status != "success":
        reason = f": {log.error.message.strip().splitlines()[-1]}" if log.error else ""
        raise ValueError(f"{path}: the eval did not complete (status {log.status}{reason})")
    if not log.samples:
        raise ValueError(f"{path}: the log holds no samples (was it written with --no-log-samples?)")
    check_samples(path, log)
    return log


CHANGED = "the log was changed after the run: rerun the task, or restore the log as Inspect wrote it"


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


def _check_reduced(path: str | Path, log: EvalLog, scorer: str, reduced: list) -> None:
    """The epoch-reduced scores of `scorer`: one per scored sample of the log, no more, no fewer."""
    scored = {s.id for s in log.samples or [] if scorer in (s.scores or {})}
    ids = Counter(s.sample_id for s in reduced)
    problems = {
        "repeated": [i for i, n in ids.items() if n > 1],
        "missing": list(scored - set(ids)),
        "of no sample in the log": list(set(ids) - scored),
    }
    listed = "; ".join(f"{what}: {', '.join(sorted(map(str, v)))}" for what, v in problems.items() if v)
    if listed:
        raise ValueError(
            f"{path}: {len(reduced)} reduced {scorer} scores for {log.eval.task} but {len(scored)} scored "
            f"samples ({listed}); {CHANGED}"
        )


def logged_scores(path: str | Path, scorer: str, per_epoch: bool = False) -> list[LoggedScore]:
    """One `scorer` score per sample of a finished log, with the sample's metadata: the
    epoch-reduced scores as the task's metrics saw them, or (per_epoch) every epoch's score with
    its own metadata."""
    log = read_finished_log(path)
    samples = log.samples or []
    if per_epoch:
        scores = []
        for sample in samples:
            score = (sample.scores or {}).get(scorer)
            if score is None:
                raise ValueError(f"{path}: sample {sample.id} has no {scorer} score")
            scores.append(LoggedScore(sample.id, score.value, score.metadata, sample.metadata or {}))
        return scores
    metadata = {s.id: s.metadata or {} for s in samples}
    reduced = next((r.samples for r in log.reductions or [] if r.scorer == scorer), None)
    if reduced is not None:
        _check_reduced(path, log, scorer, reduced)
        return [LoggedScore(s.sample_id or "", s.value, s.metadata, metadata[s.sample_id]) for s in reduced]
    return [
        LoggedScore(s.id, s.scores[scorer].value, s.scores[scorer].metadata, s.metadata or {})
        for s in samples
        if s.scores
    ]
