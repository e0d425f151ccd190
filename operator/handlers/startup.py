"""Startup: kopf's own settings, credentials for the operator's API client, metrics, webhook."""

from __future__ import annotations

import logging
from typing import Any, cast

import kopf

from .. import webhook
from ..kube import Kube
from ..metrics import serve
from ..rbac import WEBHOOK_CONFIGURATION
from ..reconcile import Reconciler
from ..validate import register_webhook
from . import state


class _QuietPolls(logging.Filter):
    """kopf logs "Timer 'on_timer' succeeded." at INFO on every poll of every job (about 1,000
    lines in 18 minutes for three jobs on a real cluster): the reconcile logs its decisions
    (phase changes) itself, so a poll that decided nothing logs nothing (kept with --debug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        message = record.getMessage()
        return not (message.startswith("Timer ") and message.endswith(" succeeded."))


def quiet_polls() -> None:
    """One INFO line per decision, not per poll or API call (docs/operator.md)."""
    objects = logging.getLogger("kopf.objects")
    if not any(isinstance(f, _QuietPolls) for f in objects.filters):
        objects.addFilter(_QuietPolls())
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        # httpx logs every request at INFO ("HTTP Request: GET ..."): the operator's API calls.
        logging.getLogger("httpx").setLevel(logging.WARNING)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger: kopf.Logger, **_: Any) -> None:
    ours = state.SETTINGS
    settings.peering.name = ours.peering_name
    settings.peering.standalone = settings.peering.standalone or ours.standalone
    # Events: the reconcile posts its own (operator/events.py, rate-limited), including its
    # failures. Log records, kopf's own included, are not posted: a log line per poll, or a
    # retry message per backoff, would flood the API server's event store.
    settings.posting.level = logging.WARNING
    settings.posting.loggers = False
    quiet_polls()
    # Retry failed handlers soon (API hiccups), backing off to a minute.
    settings.execution.default_backoff = min(settings.execution.default_backoff, 10)
    settings.execution.max_workers = ours.handler_threads
    settings.networking.error_backoffs = [1, 2, 5, 10, 20, 30]
    settings.persistence.finalizer = "draftgen.io/cleanup"
    if ours.namespaces and not any(c in ns for ns in ours.namespaces for c in "*?[!"):
        # Exact namespace names: nothing to discover, so no access to namespaces or CRDs is
        # needed (operator/rbac.py); kopf would otherwise list and watch both.
        settings.scanning.disabled = True
    # A job being deleted waits for its running timer to exit before the finalizer goes (the
    # TTL deletion is issued from the timer itself): check every second, not every minute.
    settings.background.cancellation_polling = 1
    kube = Kube.from_environment()
    if ours.webhook:
        register_webhook(ours, kube)
        settings.admission.server = webhook.server(ours)
        # kopf manages both configuration kinds under this name (operator/rbac.py).
        settings.admission.managed = WEBHOOK_CONFIGURATION
    state.set_reconciler(
        Reconciler(kube, ours, adopt=lambda obj, owner: kopf.adopt(obj, cast(kopf.Body, owner)))
    )
    serve(ours.metrics_port, ours.metrics_address)
    logger.info("draftgen operator configured: poll every %ss", ours.poll_interval_seconds)
