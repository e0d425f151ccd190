"""Create, update, resume and the periodic timer: each runs the same idempotent reconcile and
writes the resulting status (only when it changed)."""

from __future__ import annotations

import logging
import time
from typing import Any

import kopf

from draftgen.spec import GROUP, PLURAL, VERSION

from .. import metrics
from ..kube import KubeError
from ..reconcile import JobRef
from . import state


def _patch_status(patch: kopf.Patch, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A merge patch from `old` to `new` (keys that disappeared are set to null)."""
    for key, value in new.items():
        if old.get(key) != value:
            patch.status[key] = value
    for key in old:
        if key not in new and key != "kopf":
            patch.status[key] = None


def reconcile(body: kopf.Body, patch: kopf.Patch, logger: logging.Logger) -> None:
    ref = JobRef(body=dict(body))
    ref.body["metadata"] = dict(body.metadata)
    ref.body["spec"] = dict(body.spec)
    ref.body["status"] = dict(body.status)
    started = time.monotonic()
    metrics.RECONCILES.inc()
    with state.lock_for(body.metadata.uid or ref.name):
        try:
            outcome = state.reconciler().reconcile(ref)
        except KubeError as err:
            metrics.RECONCILE_ERRORS.labels(kind="api").inc()
            # kopf retries the handler (timers: on the next tick) with backoff.
            raise kopf.TemporaryError(f"{err}", delay=5 if err.retryable else 30) from err
        except Exception:
            metrics.RECONCILE_ERRORS.labels(kind="other").inc()
            raise
        finally:
            metrics.RECONCILE_DURATION.observe(time.monotonic() - started)
    old = ref.old_status
    _patch_status(patch, old, outcome.status)
    new_phase = outcome.status.get("phase")
    metrics.record_phase(ref.namespace, ref.name, new_phase)
    if new_phase != old.get("phase"):
        logger.info("phase %s → %s: %s", old.get("phase"), new_phase,
                    outcome.status.get("message", ""))
    if outcome.delete_job:
        logger.info("ttlSecondsAfterFinished passed: deleting the GenerationJob")
        state.reconciler().kube.delete("GenerationJob", ref.namespace, ref.name)


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
@kopf.on.resume(GROUP, VERSION, PLURAL)
def on_change(body: kopf.Body, patch: kopf.Patch, logger: logging.Logger, **_: Any) -> None:
    reconcile(body, patch, logger)


@kopf.timer(GROUP, VERSION, PLURAL, interval=state.SETTINGS.poll_interval_seconds,
            initial_delay=state.SETTINGS.poll_interval_seconds)
def on_timer(body: kopf.Body, patch: kopf.Patch, logger: logging.Logger, **_: Any) -> None:
    if body.metadata.get("deletionTimestamp"):
        return
    reconcile(body, patch, logger)
