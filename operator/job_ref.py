"""`JobRef`: the GenerationJob being reconciled, as the API returned it — the one handle the
reconciler and `children` pass around instead of `(name, namespace, uid)`."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class JobRef:
    """The GenerationJob being reconciled, as the API returned it."""

    body: dict[str, Any]

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.body["metadata"].get("namespace") or "default"

    @property
    def generation(self) -> int | None:
        return self.body["metadata"].get("generation")

    @property
    def uid(self) -> str | None:
        return self.body["metadata"].get("uid")

    @property
    def created(self) -> str | None:
        """`metadata.creationTimestamp` (RFC 3339), set by the API server."""
        return self.body["metadata"].get("creationTimestamp")

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.body.get("spec") or {})

    @property
    def old_status(self) -> dict[str, Any]:
        status = dict(self.body.get("status") or {})
        status.pop("kopf", None)
        return status
