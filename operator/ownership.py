"""Which objects a GenerationJob may touch: only those it controls.

Children are found by fixed names (`names`), so a name a job would use may already be taken by
an object it never created: a Deployment `web-server-0` of another team, a ConfigMap
`web-generator`. The operator changes, scales or deletes an object only when its controller
ownerReference points at this very GenerationJob (same uid); anything else is refused with
`NotOwned`, which the reconcile reports as a condition naming the object (operator/reconcile.py).
"""

from __future__ import annotations

from typing import Any

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError


class NotOwned(DraftgenError):
    """An object the job would create or change exists and is not controlled by the job."""

    exit_code = ExitCode.INVALID
    fix = "delete or rename the object of that name the job does not control"

    def __init__(self, kind: str, namespace: str, name: str, controller: str | None) -> None:
        self.kind, self.namespace, self.name, self.controller = kind, namespace, name, controller
        held = f"controlled by {controller}" if controller else "not controlled by any object"
        super().__init__(
            f"{kind} {namespace}/{name} already exists and is {held}, not by this "
            "GenerationJob; the operator neither adopts nor changes it: delete or rename that "
            "object, or give the GenerationJob another name"
        )


def controller_reference(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object's controller ownerReference, if any (at most one is allowed)."""
    for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_uid(owner: dict[str, Any]) -> str | None:
    return (owner.get("metadata") or {}).get("uid")


def is_owned(obj: dict[str, Any] | None, uid: str | None) -> bool:
    """Whether `obj` is controlled by the GenerationJob of this uid."""
    ref = controller_reference(obj)
    return (
        ref is not None
        and uid is not None
        and ref.get("uid") == uid
        and ref.get("kind") == "GenerationJob"
    )


def require_owned(kind: str, obj: dict[str, Any], uid: str | None) -> dict[str, Any]:
    """`obj` itself when the job controls it; NotOwned naming it otherwise."""
    if is_owned(obj, uid):
        return obj
    meta = obj.get("metadata") or {}
    ref = controller_reference(obj)
    holder = f"{ref.get('kind')} {ref.get('name')}" if ref else None
    raise NotOwned(
        kind,
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        holder,
    )


def set_controller(obj: dict[str, Any], owner: dict[str, Any]) -> None:
    """The controller ownerReference kopf.adopt sets, for runs without kopf (tests, tools)."""
    meta = owner.get("metadata") or {}
    ref = {
        "apiVersion": owner.get("apiVersion") or "draftgen.io/v1alpha1",
        "kind": owner.get("kind") or "GenerationJob",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    refs = obj.setdefault("metadata", {}).setdefault("ownerReferences", [])
    if not any(r.get("uid") == ref["uid"] for r in refs):
        refs.append(ref)
