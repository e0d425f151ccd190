"""What the status says about the server and the generator: each function moves the phase
through the table (`phases.enter`) and writes the message and conditions that go with it."""

from __future__ import annotations

from draftgen.spec import GenerationJobStatus

from ..conditions import get_condition, set_condition
from ..phases import Event, enter
from .spec import LWS_MISSING_REASON


def mark_suspended(status: GenerationJobStatus, gen: int | None, now: str) -> None:
    enter(status, Event.SUSPENDED)
    status.message = "suspended: generator stopped, server scaled to 0; output kept"
    status.server.ready_replicas = 0
    no_rate(status)
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


def no_rate(status: GenerationJobStatus) -> None:
    """Nothing generates (suspended, failed): no Tok/s or ETA from the last scrape."""
    status.throughput_tokens_per_second = None
    status.eta_seconds, status.eta = None, ""


def mark_failed(
    status: GenerationJobStatus, event: Event, reason: str, message: str, gen: int | None, now: str
) -> None:
    enter(status, event)
    no_rate(status)
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


def generator_failure_message(attempts: int, detail: str, more: str) -> str:
    """`attempts`: the Job's failed pods (`status.failed`); a fatal exit fails it on the first
    (podFailurePolicy), whatever backoffLimit would have allowed."""
    if attempts == 1:
        how = "on its first attempt (not retried)"
    elif attempts > 1:
        how = f"after {attempts} attempts ({attempts - 1} retries)"
    else:
        how = ""
    return (
        f"generator failed{' ' + how if how else ''}: "
        f"{detail or 'BackoffLimitExceeded'}"
        + (f"; {more}" if more else "")
        + "; output so far is kept: fix the cause and edit the spec to resume"
    )
