"""Reading finished Inspect logs into plain `LoggedScore`s (the family codecs make records of them)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import EvalLog, read_eval_log

from biasmonkey.tasks.contract import LoggedScore


def read_finished_log(path: str | Path) -> EvalLog:
    """An Inspect log (`.eval` or `.json`) of a completed eval that kept its samples."""
    log = read_eval_log(str(path))
    if log.status != "success":
        reason = f": {log.error.message.strip().splitlines()[-1]}" if log.error else ""
        raise ValueError(f"{path}: the eval did not complete (status {log.status}{reason})")
    if not log.samples:
        raise ValueError(f"{path}: the log holds no samples (was it written with --no-log-samples?)")
    return log


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
        return [LoggedScore(s.sample_id or "", s.value, s.metadata, metadata[s.sample_id]) for s in reduced]
    return [
        LoggedScore(s.id, s.scores[scorer].value, s.scores[scorer].metadata, s.metadata or {})
        for s in samples
        if s.scores
    ]
