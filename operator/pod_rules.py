"""The API server's rules for the pods the operator renders, checked on the spec before any child
is written (so `draftgen validate`, the webhook and every reconcile refuse such a spec, naming
the spec's field, instead of the API server refusing a child with 422 on every poll).

The rules a real kube-apiserver refused draftgen's children for (docs/operator.md, "What only a
real cluster shows"): two volumes mounted at one path in a container ("must be unique": the
spec's claims among themselves, or on a path the operator's pods already use), and tolerations
that `ValidateTolerations` refuses. A refusal the rules here miss still ends the job (reason
`ChildRejected`, reconcile.py), never a retry loop.
"""

from __future__ import annotations

import posixpath
from typing import Any

from draftgen.spec import GenerationJobSpec

from . import names
from .render.server import HOME

RESERVED_MOUNTS = {
    "/tmp": "every pod's scratch space (/tmp)",
    "/dev/shm": "the server's shared memory for NCCL (/dev/shm)",
    HOME: f"the server's home directory ({HOME})",
    names.JOB_FILE_DIR: f"the job document of the generator and preflight ({names.JOB_FILE_DIR})",
}
"""Paths the operator's own pods mount a volume at (operator/render)."""

_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")


def _claims(spec: GenerationJobSpec) -> list[tuple[str, str]]:
    """(field, mount path) of each claim the spec mounts into the pods."""
    out = [
        ("spec.inputs.mountPath", spec.inputs.mount_path),
        ("spec.output.mountPath", spec.output.mount_path),
    ]
    if spec.model.volume is not None:
        out.append(("spec.model.volume.mountPath", spec.model.volume.mount_path))
    return out


def mount_problems(spec: GenerationJobSpec) -> list[str]:
    """A claim mounted where another volume already is (the API server: "must be unique")."""
    problems = []
    seen: dict[str, str] = {}
    for field, path in _claims(spec):
        clean = posixpath.normpath(path)
        if clean in RESERVED_MOUNTS:
            problems.append(
                f"{field}: {path!r} is where the operator's pods mount "
                f"{RESERVED_MOUNTS[clean]}; the API server refuses two volumes at one path "
                '("must be unique"): choose another path, e.g. /data or /models'
            )
        elif clean in seen:
            problems.append(
                f"{field}: {path!r} is also {seen[clean]}; each claim needs its own mount path "
                '(the API server refuses two volumes at one path: "must be unique")'
            )
        seen.setdefault(clean, field)
    return problems


def toleration_problems(tolerations: list[dict[str, Any]], field: str) -> list[str]:
    """Each toleration the API server's `ValidateTolerations` refuses, with the fix."""
    problems = []
    for i, tol in enumerate(tolerations):
        where = f"{field}[{i}]"
        operator = tol.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            problems.append(f"{where}.operator: {operator!r} is not Equal or Exists")
        if operator == "Exists" and tol.get("value"):
            problems.append(
                f"{where}.value: must be empty with operator Exists (it matches any value of "
                f"the key): remove value {tol['value']!r}, or use operator Equal"
            )
        if not tol.get("key") and operator != "Exists":
            problems.append(
                f"{where}.operator: an empty key matches every taint only with operator "
                "Exists: set key, or operator: Exists"
            )
        if (tol.get("effect") or "") not in _EFFECTS:
            problems.append(
                f"{where}.effect: {tol.get('effect')!r} is not one of NoSchedule, "
                "PreferNoSchedule, NoExecute (or empty for all)"
            )
        if tol.get("tolerationSeconds") is not None and tol.get("effect") != "NoExecute":
            problems.append(
                f"{where}.tolerationSeconds: only with effect NoExecute: set effect: NoExecute "
                "or remove tolerationSeconds"
            )
    return problems


def pod_problems(spec: GenerationJobSpec) -> list[str]:
    """Every rule above, for the spec's pods."""
    return mount_problems(spec) + toleration_problems(
        spec.server.tolerations, "spec.server.tolerations"
    )
