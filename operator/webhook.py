"""The admission webhook as the API server must reach it, and what it validates.

A real kube-apiserver showed two things the test API server had not (docs/operator.md):
- a webhook registered with `url: https://<name>.<ns>.svc:...` is unreachable: the API server
  resolves a `url:` with its own DNS, not the cluster's. An in-cluster webhook is registered as a
  `service:` clientConfig (namespace, name, the Service's port, path) with its CA bundle, which
  `server` does when `webhook_service_name` is set (the chart sets it);
- with `failurePolicy: Fail`, validating every UPDATE also refuses the finalizer removal of a job
  that is already invalid (stored before the webhook was on, or before a policy change), so its
  deletion hangs. `needs_validation` admits every write that does not change the spec, and
  anything being deleted: the webhook refuses bad specs, never metadata or deletion.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import kopf

from .settings import OperatorSettings


class ServiceWebhookServer(kopf.WebhookServer):
    """kopf's HTTPS webhook server, registered as a `service:` clientConfig: kopf puts into the
    webhook configuration whatever client config its server yields (and appends each handler's
    id to `service.path`)."""

    def __init__(self, *, service: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service = service

    async def __call__(self, fn: Any) -> AsyncIterator[Any]:
        async for config in super().__call__(fn):
            out: dict[str, Any] = {"service": dict(self.service)}
            if config.get("caBundle"):
                out["caBundle"] = config["caBundle"]
            yield out


def server(settings: OperatorSettings) -> kopf.WebhookServer:
    """The webhook server the settings ask for: behind a Service (the chart), or at a URL."""
    options: dict[str, Any] = dict(
        addr=settings.webhook_address,
        port=settings.webhook_port,
        host=settings.webhook_host,
        certfile=settings.webhook_certfile,
        pkeyfile=settings.webhook_pkeyfile,
        insecure=settings.webhook_insecure,
    )
    if settings.webhook_cafile and os.path.exists(settings.webhook_cafile):
        options["cafile"] = settings.webhook_cafile
    if not settings.webhook_service_name:
        return kopf.WebhookServer(**options)
    service = {
        "namespace": settings.webhook_service_namespace or settings.operator_namespace,
        "name": settings.webhook_service_name,
        "port": settings.webhook_service_port,
        "path": "",
    }
    if not service["namespace"]:
        raise ValueError(
            "DRAFTGEN_OPERATOR_WEBHOOK_SERVICE_NAME is set without a namespace: set "
            "DRAFTGEN_OPERATOR_WEBHOOK_SERVICE_NAMESPACE (or OPERATOR_NAMESPACE)"
        )
    return ServiceWebhookServer(service=service, **options)


def needs_validation(
    operation: str | None, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> bool:
    """Whether an admission request is one the webhook judges: a CREATE, or an UPDATE that
    changes the spec, of an object not being deleted."""
    meta = (new or {}).get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return False  # being deleted: its finalizers must be removable, whatever its spec
    if operation == "UPDATE" and old is not None:
        return (old.get("spec") or {}) != ((new or {}).get("spec") or {})
    return operation != "DELETE"
