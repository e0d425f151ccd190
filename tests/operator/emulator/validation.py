"""The pod rules a real API server checks on every write of a pod or a pod template, which kmock
does not: the ones a real kube-apiserver (1.32) refused for draftgen's children while the emulator
said yes (/work/shared/notes/kubernetes-testing.md). Each refusal is a 422 with kube-apiserver's
own message, field path included, e.g.

    Job.batch "kimi-preflight" is invalid:
    spec.template.spec.containers[0].volumeMounts[2].mountPath: Invalid value: "/tmp": must be unique

Only these rules (apiserver's `ValidateVolumeMounts` and `ValidateTolerations`): duplicate
`mountPath` within one container (exact strings, as the API server compares them) and a
toleration whose `operator: Exists` has a `value`, or whose empty `key` has no `Exists`. The
schema itself is checked elsewhere (kubernetes-validate on the rendered manifests)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

# kind → where its pod spec lives, and kube-apiserver's "<Kind>.<group>" for messages.
POD_SPECS: dict[str, tuple[tuple[str, ...], str]] = {
    "pods": (("spec",), "Pod"),
    "jobs": (("spec", "template", "spec"), "Job.batch"),
    "deployments": (("spec", "template", "spec"), "Deployment.apps"),
}


def merged(current: dict[str, Any] | None, data: Any) -> dict[str, Any] | None:
    """The object a write would store: a created object, or the current one with a merge patch
    (`None` removes a key) or a JSON patch applied."""
    if current is None:
        return data if isinstance(data, dict) else None
    if isinstance(data, list):
        return jsonpatch.apply_patch(current, data, in_place=False)
    if isinstance(data, dict):
        return _merge(copy.deepcopy(current), data)
    return current


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def pod_spec_errors(pod_spec: dict[str, Any], prefix: str) -> list[str]:
    """kube-apiserver's field errors for the rules above, each `path: Invalid value: ...`."""
    errors = []
    for group in ("initContainers", "containers"):
        for i, container in enumerate(pod_spec.get(group) or []):
            seen: set[str] = set()
            for j, mount in enumerate(container.get("volumeMounts") or []):
                path = mount.get("mountPath") or ""
                if path in seen:
                    errors.append(
                        f"{prefix}.{group}[{i}].volumeMounts[{j}].mountPath: "
                        f'Invalid value: "{path}": must be unique'
                    )
                seen.add(path)
    for i, tol in enumerate(pod_spec.get("tolerations") or []):
        where = f"{prefix}.tolerations[{i}]"
        operator = tol.get("operator") or "Equal"
        if not tol.get("key") and operator != "Exists":
            errors.append(
                f'{where}.operator: Invalid value: "{operator}": operator must be Exists when '
                '`key` is empty, which means "match all values and all keys"'
            )
        if operator == "Exists" and tol.get("value"):
            errors.append(
                f'{where}.operator: Invalid value: "{tol["value"]}": value must be empty when '
                "`operator` is 'Exists'"
            )
        if tol.get("tolerationSeconds") is not None and tol.get("effect") != "NoExecute":
            errors.append(
                f'{where}.effect: Invalid value: "{tol.get("effect", "")}": effect must be '
                "'NoExecute' when `tolerationSeconds` is set"
            )
    return errors


def invalid(plural: str, obj: dict[str, Any] | None) -> str | None:
    """kube-apiserver's 422 message for this object, None when these rules accept it."""
    if plural not in POD_SPECS or not isinstance(obj, dict):
        return None
    where, kind = POD_SPECS[plural]
    pod_spec: Any = obj
    for key in where:
        pod_spec = (pod_spec or {}).get(key) if isinstance(pod_spec, dict) else None
    if not isinstance(pod_spec, dict):
        return None
    errors = pod_spec_errors(pod_spec, ".".join(where))
    if not errors:
        return None
    name = (obj.get("metadata") or {}).get("name") or ""
    return f'{kind} "{name}" is invalid: ' + ", ".join(errors)
