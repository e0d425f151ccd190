"""The reconcile's decisions: pure functions from what was observed to what to do and what the
status now says.

Nothing here talks to the API: `reconcile` reads the children, asks these functions, and hands
the writes to `children`. Every phase change goes through `phases.enter`.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Literal

from draftgen.spec import GenerationJobStatus
from draftgen.spec.status import ModelDownloadStatus, PreflightStatus

from . import names, observe
from .conditions import get_condition, parse_time, set_condition
from .ownership import NotOwned
from .phases import TERMINAL, Event, enter

ServerAction = Literal["create", "roll", "scale", "keep"]
GeneratorAction = Literal["start", "wait_for_stop", "restart", "observe"]


def _annotation(obj: dict[str, Any] | None, key: str) -> str | None:
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(key)


# -- the spec ---------------------------------------------------------------------------------
def reject_spec(
    status: GenerationJobStatus, problems: list[str], gen: int | None, now: str
) -> None:
    """A spec that does not validate: a running job keeps going with the last accepted one."""
    set_condition(
        status.conditions, "SpecValid", False, "InvalidSpec", "; ".join(problems), gen, now
    )
    status.observed_generation = gen
    if enter(status, Event.SPEC_REJECTED) == "Failed":
        status.message = f"spec rejected: {problems[0]}"
    else:
        # An edit broke a running job: keep running what was last accepted, say so.
        status.message = f"spec edit rejected, still running the last accepted spec: {problems[0]}"


NOT_OWNED_REASON = "ObjectNotOwned"


def mark_not_owned(status: GenerationJobStatus, err: NotOwned, gen: int | None, now: str) -> None:
    """A child's name is held by an object the job does not control: nothing was changed."""
    enter(status, Event.CHILD_NOT_OWNED)
    status.message = str(err)
    status.observed_generation = gen
    set_condition(status.conditions, "Failed", True, NOT_OWNED_REASON, str(err), gen, now)


def was_not_owned(status: GenerationJobStatus) -> bool:
    """Failed only because a foreign object held a child's name (tried again every poll)."""
    failed = get_condition(status.conditions, "Failed")
    return status.phase == "Failed" and failed is not None and failed.reason == NOT_OWNED_REASON


LWS_MISSING_REASON = "LeaderWorkerSetMissing"


def was_refused_for_lws(status: GenerationJobStatus) -> bool:
    """Failed only because LeaderWorkerSet was missing for a multi-node server (tried again
    every poll: installing it starts the job)."""
    failed = get_condition(status.conditions, "Failed")
    return status.phase == "Failed" and failed is not None and failed.reason == LWS_MISSING_REASON


def was_rejected(status: GenerationJobStatus) -> bool:
    """Failed only because its spec did not validate (a valid spec starts it again)."""
    return status.phase == "Failed" and status.message.startswith("spec rejected")


def finished_at_generation(status: GenerationJobStatus, gen: int | None) -> bool:
    """Ended, and the ending condition was written for this very spec generation."""
    if status.phase not in TERMINAL:
        return False
    cond = get_condition(status.conditions, "Complete" if status.phase == "Succeeded" else "Failed")
    return cond is not None and cond.observed_generation == gen


def ran_this_document(job: dict[str, Any] | None, digest: str) -> bool:
    """The generator Job was started with the job document of hash `digest`."""
    return _annotation(job, names.CONFIG_HASH_ANNOTATION) == digest


def confirm_complete(status: GenerationJobStatus, gen: int | None, now: str) -> None:
    """A success that still holds for a new generation (an edit the generator does not act on)."""
    complete = get_condition(status.conditions, "Complete")
    set_condition(
        status.conditions,
        "Complete",
        True,
        "AllDatasetsDone",
        complete.message if complete else "every dataset is done",
        gen,
        now,
    )
    status.observed_generation = gen


def ttl_expired(ttl: int | None, completion_time: str | None, now: str) -> bool:
    """`ttlSecondsAfterFinished` has passed since the job ended."""
    ended = parse_time(completion_time)
    if ttl is None or ended is None:
        return False
    return (parse_time(now) or ended) - ended >= datetime.timedelta(seconds=ttl)


# -- the children -----------------------------------------------------------------------------
def server_action(want: dict[str, Any], have: dict[str, Any] | None) -> ServerAction:
    """What one server Deployment needs: created, rolled (its rendering changed), scaled to 1."""
    if have is None:
        return "create"
    if (
        _annotation(have, names.SERVER_HASH_ANNOTATION)
        != want["metadata"]["annotations"][names.SERVER_HASH_ANNOTATION]
    ):
        return "roll"  # the server's own spec changed (Recreate); budgets never get here
    if int((have.get("spec") or {}).get("replicas") or 0) != 1:
        return "scale"
    return "keep"


def generator_ended(job: dict[str, Any] | None, digest: str) -> bool:
    """The generator already ended with this job document (the server is not needed again)."""
    return (
        job is not None
        and not job["metadata"].get("deletionTimestamp")
        and ran_this_document(job, digest)
        and observe.job_outcome(job)[0] != "running"
    )


def generator_action(job: dict[str, Any] | None, digest: str) -> GeneratorAction:
    """What the generator Job needs once the server is ready."""
    if job is None:
        return "start"
    if job["metadata"].get("deletionTimestamp"):
        return "wait_for_stop"
    if not ran_this_document(job, digest):
        # The job document changed (e.g. a budget): restart only the generator; it resumes
        # from the output exactly. The server keeps running.
        return "restart"
    return "observe"


# -- the status -------------------------------------------------------------------------------
def mark_suspended(status: GenerationJobStatus, gen: int | None, now: str) -> None:
    enter(status, Event.SUSPENDED)
    status.message = "suspended: generator stopped, server scaled to 0; output kept"
    status.server.ready_replicas = 0
    set_condition(
        status.conditions,
        "Suspended",
        True,
        "SuspendedBySpec",
        "spec.suspend is true; set it to false to resume where it stopped",
        gen,
        now,
    )
    set_condition(
        status.conditions,
        "ServerReady",
        False,
        "Suspended",
        "server scaled to 0 while suspended",
        gen,
        now,
    )
    set_condition(status.conditions, "Generating", False, "Suspended", "suspended", gen, now)


SERVER_FAILURE_REASONS = frozenset(
    {"ServerOutOfHostMemory", "ServerOutOfGPUMemory", "ServerCrashLoop", LWS_MISSING_REASON}
)
"""ServerReady reasons that say why the job failed (observe.server_health): kept when the
server is then scaled down, since they are still why it is not ready."""


def mark_server_down(
    status: GenerationJobStatus, reason: str, message: str, gen: int | None, now: str
) -> None:
    """The server was scaled to 0 or deleted: ServerReady says so, not what it last saw."""
    status.server.ready_replicas = 0
    cond = get_condition(status.conditions, "ServerReady")
    if cond is None or (cond.status == "False" and cond.reason in SERVER_FAILURE_REASONS):
        return  # nothing said about a server yet, or a failure that still explains it
    set_condition(status.conditions, "ServerReady", False, reason, message, gen, now)


def mark_failed(
    status: GenerationJobStatus, event: Event, reason: str, message: str, gen: int | None, now: str
) -> None:
    enter(status, event)
    status.message = message
    status.completion_time = status.completion_time or now
    set_condition(status.conditions, "Failed", True, reason, message, gen, now)
    set_condition(status.conditions, "Generating", False, reason, message, gen, now)


def mark_server_starting(
    status: GenerationJobStatus,
    waiting: tuple[str, str] | None,
    ready: int,
    replicas: int,
    gen: int | None,
    now: str,
) -> None:
    reason, message = waiting or (
        "Starting",
        f"{ready}/{replicas} server replicas ready; SGLang is "
        "loading the model (a 1T-parameter model takes 10-30 minutes)",
    )
    enter(status, Event.SERVER_STARTING)
    status.message = message
    set_condition(status.conditions, "ServerReady", False, reason, message, gen, now)
    set_condition(
        status.conditions,
        "Generating",
        False,
        "WaitingForServer",
        "the generator starts once every server replica is ready",
        gen,
        now,
    )


def mark_server_ready(
    status: GenerationJobStatus, ready: int, replicas: int, gen: int | None, now: str
) -> None:
    set_condition(
        status.conditions,
        "ServerReady",
        ready >= replicas,
        "Ready" if ready >= replicas else "ReplicaNotReady",
        f"{ready}/{replicas} server replicas ready",
        gen,
        now,
    )


def mark_generator_restarting(
    status: GenerationJobStatus, message: str, gen: int | None, now: str
) -> None:
    enter(status, Event.GENERATOR_RUNNING)
    status.message = message
    set_condition(status.conditions, "Generating", False, "RestartingGenerator", message, gen, now)


def mark_generator_started(status: GenerationJobStatus, gen: int | None, now: str) -> None:
    enter(status, Event.GENERATOR_RUNNING)
    status.start_time = status.start_time or now
    status.message = "generator started"
    set_condition(
        status.conditions, "Generating", True, "GeneratorStarted", status.message, gen, now
    )


def mark_generator_running(
    status: GenerationJobStatus, stuck: tuple[str, str] | None, gen: int | None, now: str
) -> None:
    enter(status, Event.GENERATOR_RUNNING)
    status.start_time = status.start_time or now
    if stuck is not None:
        status.message = stuck[1]
        set_condition(status.conditions, "Generating", False, stuck[0], stuck[1], gen, now)
        return
    status.message = "generating"
    set_condition(
        status.conditions,
        "Generating",
        True,
        "GeneratorRunning",
        "the generator is running",
        gen,
        now,
    )


def mark_succeeded(status: GenerationJobStatus, gen: int | None, now: str) -> None:
    enter(status, Event.GENERATOR_SUCCEEDED)
    status.completion_time = status.completion_time or now
    status.message = "every dataset is done"
    status.eta_seconds, status.eta = 0.0, "0s"
    set_condition(status.conditions, "Complete", True, "AllDatasetsDone", status.message, gen, now)
    set_condition(status.conditions, "Generating", False, "Completed", status.message, gen, now)


def generator_failure_message(backoff_limit: int, detail: str, more: str) -> str:
    return (
        f"generator failed after {backoff_limit} retries: "
        f"{detail or 'BackoffLimitExceeded'}"
        + (f"; {more}" if more else "")
        + "; output so far is kept: fix the cause and edit the spec to resume"
    )


# -- before the GPUs: the model download and the preflight ------------------------------------
FirstRunAction = Literal["start", "wait_for_stop", "restart", "observe"]


def first_run_applies(server_deployments: list[dict[str, Any]], generator: Any) -> bool:
    """The download and the preflight gate the first server only: once a server or a generator
    exists (running, suspended, restarting) the job is past them."""
    return not server_deployments and generator is None


def download_action(have: dict[str, Any] | None, revision_key: str) -> FirstRunAction:
    """What the model download Job needs: started, or restarted for another revision."""
    if have is None:
        return "start"
    if have["metadata"].get("deletionTimestamp"):
        return "wait_for_stop"
    if _annotation(have, names.REVISION_ANNOTATION) != revision_key:
        return "restart"
    return "observe"


def preflight_action(have: dict[str, Any] | None, digest: str, gen: int | None) -> FirstRunAction:
    """What the preflight Job needs: started, restarted for another job document, or (failed)
    run again after any spec edit, since the data may have been fixed meanwhile."""
    if have is None:
        return "start"
    if have["metadata"].get("deletionTimestamp"):
        return "wait_for_stop"
    if not ran_this_document(have, digest):
        return "restart"
    failed = observe.job_outcome(have)[0] == "failed"
    if failed and _annotation(have, names.GENERATION_ANNOTATION) != str(gen or 0):
        return "restart"
    return "observe"


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
