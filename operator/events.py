"""Kubernetes Events about a GenerationJob, so `kubectl describe gj NAME` lists what happened.

One Event for every phase change and one for every failure reason the status starts to report
(a rejected spec, a server that cannot be scheduled or keeps crashing, a generator out of
retries, an API call the operator was refused), each with the GenerationJob as its
`involvedObject`. kopf posts log records as Events only with `settings.posting.loggers`, which
is off (a log line per poll would flood the API), so these are posted explicitly
(`kopf.event`), through `EventLimiter`: a job whose status flaps, or whose reconcile fails on
every poll, cannot flood the API server's event store.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from .decisions import SERVER_FAILURE_REASONS

EventType = Literal["Normal", "Warning"]

WARNING_REASONS = frozenset(
    {
        "InvalidSpec",
        "Unschedulable",
        "ImagePullError",
        "GeneratorUnschedulable",
        "GeneratorImagePullError",
        "GeneratorFailed",
        "ChildRejected",
        "PreflightUnschedulable",
        "PreflightImagePullError",
        "ModelDownloadUnschedulable",
        "ModelDownloadImagePullError",
        *SERVER_FAILURE_REASONS,
    }
)
"""Condition reasons that mean a person has to act (docs/operator.md lists each one)."""

API_ERROR_REASON = "ReconcileError"
"""Reason of the Event posted when the API refuses one of the operator's calls (e.g. 403)."""


@dataclasses.dataclass(frozen=True)
class JobEvent:
    """One Event to post about a GenerationJob."""

    type: EventType
    reason: str
    message: str
    once: bool = True
    """Post the same reason and message once per `EventLimiter.repeat_seconds` (a failure seen
    on every poll); phase changes are never repeats."""


def _failures(status: dict[str, Any]) -> dict[str, str]:
    """reason → message of every failure reason the status reports (one per reason)."""
    out: dict[str, str] = {}
    for cond in status.get("conditions") or []:
        reason = cond.get("reason") or ""
        if reason in WARNING_REASONS and reason not in out:
            out[reason] = cond.get("message") or ""
    return out


def job_events(old: dict[str, Any], new: dict[str, Any]) -> list[JobEvent]:
    """The Events one reconcile's status change calls for: the phase change, then each failure
    reason that is new (or says something new)."""
    events = []
    old_phase, new_phase = old.get("phase"), new.get("phase")
    if new_phase and new_phase != old_phase:
        events.append(
            JobEvent(
                "Warning" if new_phase == "Failed" else "Normal",
                str(new_phase),
                f"phase {old_phase or 'none'} → {new_phase}: {new.get('message') or ''}".rstrip(
                    ": "
                ),
                once=False,
            )
        )
    before = _failures(old)
    for reason, message in _failures(new).items():
        if before.get(reason) != message:
            events.append(JobEvent("Warning", reason, message))
    return events


@dataclasses.dataclass
class _Budget:
    tokens: float
    updated: float
    recent: dict[tuple[str, str], float] = dataclasses.field(default_factory=dict)


class EventLimiter:
    """Per job: at most `burst` Events at once, refilled at one per `refill_seconds`, and the
    same (reason, message) at most once per `repeat_seconds`. Thread-safe (handlers run in
    kopf's thread pool)."""

    def __init__(
        self,
        *,
        burst: int = 10,
        refill_seconds: float = 30.0,
        repeat_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst, self.refill_seconds, self.repeat_seconds = burst, refill_seconds, repeat_seconds
        self._clock = clock
        self._jobs: dict[str, _Budget] = {}
        self._lock = threading.Lock()

    def admit(self, job: str, events: Iterable[JobEvent]) -> list[JobEvent]:
        """The events of `job` that may be posted now (the others are dropped)."""
        out = []
        with self._lock:
            now = self._clock()
            budget = self._jobs.setdefault(job, _Budget(tokens=self.burst, updated=now))
            budget.tokens = min(
                self.burst, budget.tokens + (now - budget.updated) / self.refill_seconds
            )
            budget.updated = now
            budget.recent = {
                k: t for k, t in budget.recent.items() if now - t < self.repeat_seconds
            }
            for event in events:
                key = (event.reason, event.message)
                if (event.once and key in budget.recent) or budget.tokens < 1:
                    continue
                budget.tokens -= 1
                if event.once:
                    budget.recent[key] = now
                out.append(event)
        return out

    def forget(self, job: str) -> None:
        with self._lock:
            self._jobs.pop(job, None)
