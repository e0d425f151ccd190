"""Create, update, resume and the periodic timer: each runs the same idempotent reconcile and
writes the resulting status (only when it changed)."""

from __future__ import annotations

import time
from typing import Any

import kopf

from draftgen.spec import GROUP, PLURAL, VERSION

from .. import metrics
from ..events import API_ERROR_REASON, JobEvent, job_events
from ..kube import KubeError
from . import state


def post_events(body: kopf.Body, events: list[JobEvent]) -> None:
    """Post the events the job's rate limit admits (kopf sends them in the background)."""
    for event in state.EVENTS.admit(body.metadata.uid or body.metadata.name or "", events):
        kopf.event(body, type=event.type, reason=event.reason, message=event.message)


def reconcile(body: kopf.Body, logger: kopf.Logger) -> None:
    """Reconcile the job as it is *now* and write its status, all under the job's lock.

    The body kopf hands over may predate a status another handler just wrote (the timer and a
    change handler can run back to back): acting on it could re-create a server that was just
    torn down. So the object is read fresh and the status written directly, inside the lock.
    """
    name, namespace = body.metadata.name, body.metadata.namespace or "default"
    reconciler = state.reconciler()
    started = time.monotonic()
    metrics.RECONCILES.inc()
    with state.lock_for(body.metadata.uid or name):
        try:
            done = reconciler.reconcile_stored(namespace, name)
            if done is None:
                return
            ref, outcome = done
        except KubeError as err:
            metrics.RECONCILE_ERRORS.labels(kind="api").inc()
            # A refused call (403, a webhook, a quota) is otherwise only in the operator's log.
            post_events(body, [JobEvent("Warning", API_ERROR_REASON, str(err))])
            # kopf retries the handler (timers: on the next tick) with backoff.
            raise kopf.TemporaryError(f"{err}", delay=5 if err.retryable else 30) from err
        except Exception as err:
            metrics.RECONCILE_ERRORS.labels(kind="other").inc()
            post_events(
                body, [JobEvent("Warning", "ReconcileFailed", f"{type(err).__name__}: {err}")]
            )
            raise
        finally:
            metrics.RECONCILE_DURATION.observe(time.monotonic() - started)
    old_phase, new_phase = ref.old_status.get("phase"), outcome.status.get("phase")
    metrics.record_phase(namespace, name, new_phase)
    post_events(body, job_events(ref.old_status, outcome.status))
    if new_phase != old_phase:
        logger.info("phase %s → %s: %s", old_phase, new_phase, outcome.status.get("message", ""))
    if outcome.delete_job:
        logger.info("ttlSecondsAfterFinished passed: deleting the GenerationJob")
        reconciler.kube.delete("GenerationJob", namespace, name)


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
@kopf.on.resume(GROUP, VERSION, PLURAL)
def on_change(body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
    reconcile(body, logger)


@kopf.timer(
    GROUP,
    VERSION,
    PLURAL,
    interval=state.SETTINGS.poll_interval_seconds,
    initial_delay=state.SETTINGS.poll_interval_seconds,
)
def on_timer(body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
    reconcile(body, logger)
