"""What the status says before the GPUs are booked: the model download (its progress, commit and
failure) and the preflight (its report and failure), each with the fix a person needs."""

from __future__ import annotations

import json

from draftgen.spec import GenerationJobStatus
from draftgen.spec.status import ModelDownloadStatus, PreflightStatus

from ..conditions import set_condition
from ..phases import Event, enter


def _size(n: int) -> str:
    return f"{n / 1e9:.1f}GB" if n >= 1e8 else f"{n / 1e6:.1f}MB"


def download_progress_text(done: int | None, total: int | None) -> str:
    """`41% of 595.0GB` (the printer column), `12.3GB` without a total yet, '' with nothing."""
    if done is None:
        return ""
    if not total:
        return _size(done)
    return f"{min(100, 100 * done // total)}% of {_size(total)}"


def mark_downloading(
    status: GenerationJobStatus,
    model: ModelDownloadStatus,
    gen: int | None,
    now: str,
    message: str | None = None,
) -> None:
    enter(status, Event.DOWNLOADING_MODEL)
    model.progress = download_progress_text(model.bytes_done, model.bytes_total) or model.progress
    status.model = model
    status.message = message or (
        f"downloading {model.repo}@{model.revision or 'main'} into {model.path}"
        + (f": {model.progress}" if model.progress else "")
        + "; the server is created once it is complete"
    )
    set_condition(status.conditions, "ModelReady", False, "Downloading", status.message, gen, now)


def download_commit(message: str) -> str | None:
    """The commit the download Job reported in its termination message (`{"commit": ...}`)."""
    try:
        commit = json.loads(message).get("commit")
    except (ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) else None


def mark_downloaded(
    status: GenerationJobStatus, model: ModelDownloadStatus, gen: int | None, now: str
) -> None:
    model.progress = "done"
    if model.bytes_total is not None:
        model.bytes_done = model.bytes_total
    status.model = model
    set_condition(
        status.conditions,
        "ModelReady",
        True,
        "Downloaded",
        f"{model.repo} at commit {model.commit or 'unknown'} is in {model.path}",
        gen,
        now,
    )


def download_failure_message(model: ModelDownloadStatus, detail: str, pod_message: str) -> str:
    return (
        f"model download of {model.repo}@{model.revision or 'main'} failed: "
        f"{pod_message[-600:] or detail or 'BackoffLimitExceeded'}; check model.weights, "
        "model.revision and model.hfTokenSecret (a gated repository needs a token that accepted "
        "its terms); what is on the volume is kept and the next try fetches only what is missing"
    )


def preflight_report(message: str) -> PreflightStatus | None:
    """The preflight Job's report from its termination message, None if it is not one (a
    crash's log lines)."""
    try:
        return PreflightStatus.model_validate_json(message)
    except ValueError:
        return None


def mark_preflight_running(status: GenerationJobStatus, gen: int | None, now: str) -> None:
    enter(status, Event.PREFLIGHT_RUNNING)
    status.message = (
        "preflight: reading each dataset's first rows and checking the tokenizer; the server is "
        "created once they pass"
    )
    set_condition(status.conditions, "InputsValid", False, "Checking", status.message, gen, now)


def mark_preflight_passed(
    status: GenerationJobStatus, report: PreflightStatus | None, gen: int | None, now: str
) -> None:
    status.preflight = report
    set_condition(
        status.conditions,
        "InputsValid",
        True,
        "PreflightPassed",
        f"{len(report.datasets) if report else 'all'} datasets read, tokenizer checked",
        gen,
        now,
    )


def preflight_failure_message(report: PreflightStatus | None, pod_message: str) -> str:
    """The problems the preflight named (each with its fix), or the crash it had."""
    if report is not None:
        problems = ([] if report.tokenizer_passed else [report.tokenizer]) + [
            d.problem for d in report.datasets if d.problem
        ]
        if problems:
            return (
                "preflight failed, no server was created: "
                + "; ".join(problems)
                + "; after fixing, edit the spec (any field) to run the preflight again"
            )
    return (
        "preflight failed, no server was created: "
        + (pod_message[-600:] or "the preflight pod did not report")
        + "; after fixing, edit the spec (any field) to run the preflight again"
    )
