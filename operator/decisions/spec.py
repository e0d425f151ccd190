"""Decisions on the spec and the job's ending: a rejected spec, a child's name held by a foreign
object, a refused multi-node server, and when an ended job stays ended."""

from __future__ import annotations

import datetime
import re
from typing import Any

from draftgen.spec import GenerationJobStatus

from ..conditions import get_condition, parse_time, set_condition
from ..ownership import NotOwned
from ..phases import TERMINAL, Event, enter


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
        # Ended: ttlSecondsAfterFinished counts from here (a fixed spec clears it).
        status.completion_time = status.completion_time or now
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


def raw_ttl(spec: dict[str, Any]) -> int | None:
    """`ttlSecondsAfterFinished` of a spec that did not validate, if it is itself usable."""
    ttl = spec.get("ttlSecondsAfterFinished")
    return ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0 else None


def ttl_expired(ttl: int | None, completion_time: str | None, now: str) -> bool:
    """`ttlSecondsAfterFinished` has passed since the job ended."""
    ended = parse_time(completion_time)
    if ttl is None or ended is None:
        return False
    return (parse_time(now) or ended) - ended >= datetime.timedelta(seconds=ttl)


CHILD_REJECTED_REASON = "ChildRejected"
_INVALID_VALUE = re.compile(r'Invalid value: "([^"]*)"')


def _fields_with(node: Any, values: set[str], path: str) -> list[str]:
    """Paths of the spec's string fields holding one of `values`."""
    if isinstance(node, dict):
        return [f for k, v in node.items() for f in _fields_with(v, values, f"{path}.{k}")]
    if isinstance(node, list):
        return [f for i, v in enumerate(node) for f in _fields_with(v, values, f"{path}[{i}]")]
    return [path] if isinstance(node, str) and node in values else []


def child_rejected_message(spec: dict[str, Any], api_message: str) -> str:
    """What the API server said about the refused child, and the spec fields whose values it
    names (its message names the child's field, e.g. `...volumeMounts[2].mountPath`)."""
    # KubeError's message is "METHOD URL: <the API server's words>".
    words = api_message.split(": ", 1)[1] if api_message[:6].isupper() else api_message
    fields = _fields_with(spec, set(_INVALID_VALUE.findall(words)), "spec")
    return (
        f"the API server refused a child: {words[:800]}"
        + (f" (from {', '.join(sorted(set(fields)))})" if fields else "")
        + "; retrying cannot help: fix the spec and edit it to run again (a spec draftgen's "
        "checks accepted: please report it)"
    )


def stuck_too_long(since: str | None, now: str, limit_seconds: int) -> bool:
    """A pod stuck since `since` has used up the `limit_seconds` it may be stuck (0: never)."""
    start, current = parse_time(since), parse_time(now)
    if not limit_seconds or start is None or current is None:
        return False
    return current - start >= datetime.timedelta(seconds=limit_seconds)


def overdue(
    stuck: tuple[str, str] | None, since: str | None, now: str, limit_seconds: int
) -> tuple[str, str] | None:
    """(reason, message) to fail with once a stuck pod used up its time; None until then."""
    if stuck is None or not stuck_too_long(since, now, limit_seconds):
        return None
    return stuck[0], gave_up(stuck[1], limit_seconds)


def gave_up(message: str, limit_seconds: int) -> str:
    """A stuck pod's message once its deadline passed."""
    from draftgen.plan.eta import format_duration

    return (
        f"{message}; gave up after {format_duration(float(limit_seconds))} (the operator's "
        "stuckPodSeconds): fix the cause and edit the spec to try again"
    )
