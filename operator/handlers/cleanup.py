"""Deletion: stop the generator and wait for its pod to exit, then remove every child the job
controls, explicitly (not only through owner references); an object of a child's name that it
does not control stays."""

from __future__ import annotations

from typing import Any

import kopf

from draftgen.spec import GROUP, PLURAL, VERSION

from .. import metrics
from ..kube import KubeError
from . import state


@kopf.on.delete(GROUP, VERSION, PLURAL)
def on_delete(body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
    name, namespace = body.metadata.name, body.metadata.namespace or "default"
    try:
        running = state.reconciler().delete_children(
            name, namespace, body.metadata.uid, body.status.get("phase")
        )
    except KubeError as err:
        raise kopf.TemporaryError(str(err), delay=5) from err
    if running:
        # The finalizer stays until the generator pod exited: a job re-created under this name
        # must never run a second generator on the same output.
        raise kopf.TemporaryError(
            f"waiting for the generator pod {running[0]} to exit before deleting the rest",
            delay=2,
        )
    metrics.record_phase(namespace, name, None)
    state.forget(body.metadata.uid or name)
    logger.info("deleted the server, the generator and its ConfigMap")
