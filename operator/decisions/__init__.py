"""The reconcile's decisions: pure functions from what was observed to what to do and what the
status now says.

Nothing here talks to the API: `reconcile` reads the children, asks these functions, and hands
the writes to `children`. Every phase change goes through `phases.enter`. One module a concern:
`spec` (a rejected spec, a refusal, an ended job), `children` (what each child object needs),
`status` (the server's and the generator's conditions), `first_run` (the model download and the
preflight). Callers use them through this package (`decisions.mark_failed`).
"""

from __future__ import annotations

from .children import (
    JobAction,
    ServerAction,
    download_action,
    first_run_applies,
    generator_action,
    generator_ended,
    preflight_action,
    ran_this_document,
    server_action,
)
from .first_run import (
    download_commit,
    download_failure_message,
    download_progress_text,
    mark_downloaded,
    mark_downloading,
    mark_preflight_passed,
    mark_preflight_running,
    preflight_failure_message,
    preflight_report,
)
from .spec import (
    CHILD_REJECTED_REASON,
    LWS_MISSING_REASON,
    NOT_OWNED_REASON,
    child_rejected_message,
    confirm_complete,
    finished_at_generation,
    gave_up,
    mark_not_owned,
    overdue,
    raw_ttl,
    reject_spec,
    stuck_too_long,
    ttl_expired,
    was_not_owned,
    was_refused_for_lws,
    was_rejected,
)
from .status import (
    SERVER_FAILURE_REASONS,
    generator_failure_message,
    mark_failed,
    mark_generator_restarting,
    mark_generator_running,
    mark_generator_started,
    mark_server_down,
    mark_server_ready,
    mark_server_starting,
    mark_succeeded,
    mark_suspended,
)

__all__ = [
    "CHILD_REJECTED_REASON",
    "LWS_MISSING_REASON",
    "NOT_OWNED_REASON",
    "SERVER_FAILURE_REASONS",
    "JobAction",
    "ServerAction",
    "child_rejected_message",
    "confirm_complete",
    "download_action",
    "download_commit",
    "download_failure_message",
    "download_progress_text",
    "finished_at_generation",
    "first_run_applies",
    "gave_up",
    "generator_action",
    "generator_ended",
    "generator_failure_message",
    "mark_downloaded",
    "mark_downloading",
    "mark_failed",
    "mark_generator_restarting",
    "mark_generator_running",
    "mark_generator_started",
    "mark_not_owned",
    "mark_preflight_passed",
    "mark_preflight_running",
    "mark_server_down",
    "mark_server_ready",
    "mark_server_starting",
    "mark_succeeded",
    "mark_suspended",
    "overdue",
    "preflight_action",
    "preflight_failure_message",
    "preflight_report",
    "ran_this_document",
    "raw_ttl",
    "reject_spec",
    "server_action",
    "stuck_too_long",
    "ttl_expired",
    "was_not_owned",
    "was_refused_for_lws",
    "was_rejected",
]
