"""The GenerationJob's phase machine: every allowed (phase, event) → phase, in one table.

The reconcile never assigns `status.phase` itself: it names what happened (an `Event`) and
`enter` looks the new phase up here, refusing a transition the table does not declare. So this
table is the whole lifecycle, and a new path through the code that the table does not allow
fails loudly instead of writing a phase nobody planned for.
"""

from __future__ import annotations

import enum

from draftgen.spec import GenerationJobStatus
from draftgen.spec.status import PHASES, Phase

TERMINAL: tuple[Phase, ...] = ("Succeeded", "Failed")
ACTIVE: tuple[Phase, ...] = tuple(p for p in PHASES if p not in TERMINAL)
"""Phases of a job that has not ended (the reconcile moves terminal ones back to Pending
before it acts on a changed spec)."""


class Event(enum.Enum):
    """What the reconcile observed or decided."""

    SPEC_REJECTED = "the spec does not validate"
    SPEC_FIXED = "a rejected spec validates again"
    SPEC_CHANGED_AFTER_END = "the spec changed after the job ended: run again"
    SUSPENDED = "spec.suspend is true"
    DOWNLOADING_MODEL = "the model download Job is fetching hf:// weights onto the volume"
    DOWNLOAD_FAILED = "the model download Job ran out of retries or was refused"
    PREFLIGHT_RUNNING = "the preflight Job is checking the inputs and the tokenizer"
    PREFLIGHT_FAILED = "the preflight found a dataset or the tokenizer unusable"
    SERVER_STARTING = "server replicas not ready yet, no generator"
    SERVER_FAILED = "the server will not come up by itself"
    GENERATOR_RUNNING = "the generator was started, is restarting or is running"
    GENERATOR_SUCCEEDED = "the generator Job completed"
    GENERATOR_FAILED = "the generator Job ran out of retries"
    CHILD_NOT_OWNED = "an object of a child's name exists and is not controlled by the job"
    CHILD_REJECTED = "the API server refused a child the job needs (422): retrying cannot help"
    OWNERSHIP_RETRY = "a job failed on a foreign object: try again (it may be gone)"
    SERVER_UNSUPPORTED = "the cluster lacks what the server needs (LeaderWorkerSet)"
    SERVER_SUPPORT_RETRY = "a job refused for a missing LeaderWorkerSet: try again (installed?)"


class UndeclaredTransition(RuntimeError):
    """The reconcile asked for a transition the table does not declare (a bug, not the user's)."""

    def __init__(self, phase: str, event: Event) -> None:
        self.phase, self.event = phase, event
        super().__init__(f"no phase transition declared from {phase} on {event.name}")


ON_SPEC_REJECTED: dict[Phase, Phase] = {
    # A running job keeps running the last accepted spec (so does a suspended one);
    "StartingServer": "StartingServer",
    "Generating": "Generating",
    "Suspended": "Suspended",
    # before any server exists a rejected edit has nothing running to protect: it fails.
    "Pending": "Failed",
    "DownloadingModel": "Failed",
    "Preflight": "Failed",
    "Succeeded": "Failed",
    "Failed": "Failed",
}
"""Where a spec edit that does not validate leaves a job, from each phase."""

FROM_ANY_ACTIVE: dict[Event, Phase] = {
    # Whatever the children say, from any phase of a job that has not ended (a resumed job is
    # still Suspended, a restarted generator's job may need its server again).
    Event.SUSPENDED: "Suspended",
    # Weights first, then the inputs, then the GPUs: each step is re-entered from wherever a
    # job stands before its server exists (a spec edit, a resumed suspension).
    Event.DOWNLOADING_MODEL: "DownloadingModel",
    Event.DOWNLOAD_FAILED: "Failed",
    Event.PREFLIGHT_RUNNING: "Preflight",
    Event.PREFLIGHT_FAILED: "Failed",
    Event.SERVER_STARTING: "StartingServer",
    Event.SERVER_FAILED: "Failed",
    Event.GENERATOR_RUNNING: "Generating",
    Event.GENERATOR_SUCCEEDED: "Succeeded",
    Event.GENERATOR_FAILED: "Failed",
    # A multi-node job where LeaderWorkerSet is not installed: refused, retried on every poll.
    Event.SERVER_UNSUPPORTED: "Failed",
}
"""Events that lead to the same phase from every active phase."""

TRANSITIONS: dict[tuple[Phase, Event], Phase] = {
    **{(phase, Event.SPEC_REJECTED): to for phase, to in ON_SPEC_REJECTED.items()},
    **{(phase, event): to for event, to in FROM_ANY_ACTIVE.items() for phase in ACTIVE},
    # A foreign object holds a child's name: refused from wherever the reconcile meets it
    # (reading an ended job's generator Job too).
    **{(phase, Event.CHILD_NOT_OWNED): "Failed" for phase in PHASES},
    # A child the API server refuses (422) fails the job until the spec changes.
    **{(phase, Event.CHILD_REJECTED): "Failed" for phase in PHASES},
    # A refused job is tried again: fixed spec, gone foreign object, installed LeaderWorkerSet.
    ("Failed", Event.SPEC_FIXED): "Pending",
    ("Failed", Event.OWNERSHIP_RETRY): "Pending",
    ("Failed", Event.SERVER_SUPPORT_RETRY): "Pending",
    # The spec changed after the job ended: run again (the generator resumes).
    ("Succeeded", Event.SPEC_CHANGED_AFTER_END): "Pending",
    ("Failed", Event.SPEC_CHANGED_AFTER_END): "Pending",
}
"""Every allowed (phase, event) → phase: the whole lifecycle."""


def next_phase(phase: str, event: Event) -> Phase:
    """The phase `event` leads to from `phase`; UndeclaredTransition when the table has none."""
    try:
        return TRANSITIONS[(phase, event)]  # type: ignore[index]
    except KeyError:
        raise UndeclaredTransition(phase, event) from None


def enter(status: GenerationJobStatus, event: Event) -> Phase:
    """Move `status` to the phase the table gives for `event`, and return it."""
    status.phase = next_phase(status.phase, event)
    return status.phase
