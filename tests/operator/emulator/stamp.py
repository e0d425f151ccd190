"""The metadata a real API server writes on every write: `uid`, `creationTimestamp`,
`generation` and `resourceVersion` on create; a new `resourceVersion` on every update, and
`generation` bumped when `spec` changes; a JSON patch's `test` ops checked first (422)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import jsonpatch
import kmock


def now() -> str:
    """A timestamp as the API server writes it (RFC 3339, seconds, UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(request: kmock.Request, objects: Any, next_version: Callable[[], str]) -> str | None:
    """Metadata a real API server sets on a write; the new resourceVersion, if any."""
    data = request.data
    if request.action == kmock.action.CREATE and isinstance(data, dict):
        meta = data.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now())
        meta.setdefault("generation", 1)
        if request.namespace and not meta.get("namespace"):
            meta["namespace"] = request.namespace
        meta["resourceVersion"] = version = next_version()
        return version
    elif request.action == kmock.action.UPDATE and request.name is not None:
        key = (request.resource, request.namespace, request.name)
        current = objects[key].raw if key in objects and not objects[key].deleted else None
        if current is None:
            return None
        if isinstance(data, list):
            # Apply now to validate the `test` ops (422 on conflict), then stamp.
            jsonpatch.apply_patch(current, data, in_place=False)
        version = next_version()
        if isinstance(data, list):
            spec_changed = any(str(op.get("path", "")).startswith("/spec") for op in data)
            data.append({"op": "add", "path": "/metadata/resourceVersion", "value": version})
            if spec_changed and request.subresource is None:
                data.append(
                    {
                        "op": "add",
                        "path": "/metadata/generation",
                        "value": int(current["metadata"].get("generation", 1)) + 1,
                    }
                )
        elif isinstance(data, dict):
            meta = data.setdefault("metadata", {})
            meta["resourceVersion"] = version
            if (
                "spec" in data
                and request.subresource is None
                and data["spec"] != current.get("spec")
            ):
                meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        return version
    return None
