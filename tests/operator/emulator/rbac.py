"""Authorization of the operator's requests as a real API server does it: RBAC against the rules
the chart grants, and the `OwnerReferencesPermissionEnforcement` admission plugin's rule, each
refusal a 403 with kube-apiserver's own message."""

from __future__ import annotations

from typing import Any

import attrs
import kmock
from kmock._internal import k8s as kmock_k8s

OPERATOR_AGENTS = ("kopf/", "draftgen-operator")
"""User agents of the operator's two API clients (kopf's and draftgen's own)."""


@attrs.frozen
class Grant:
    """PolicyRules bound to the operator: cluster-wide (a ClusterRoleBinding) or only in some
    namespaces (RoleBindings)."""

    rules: tuple[dict[str, Any], ...]
    namespaces: frozenset[str] | None = None


@attrs.frozen
class Rbac:
    """What a real API server authorizes for the operator's ServiceAccount, optionally with the
    `OwnerReferencesPermissionEnforcement` admission plugin (on by default in OpenShift): a
    request may set `blockOwnerDeletion` only with `update` on the owner's `finalizers`.
    Enforced on the operator's requests only (the tests' own client plays cluster-admin);
    refusals answer 403 with the real server's message."""

    grants: tuple[Grant, ...]
    owner_references: bool = True
    user: str = "system:serviceaccount:draftgen:dg-draftgen"

    def allows(
        self, verb: str, group: str, resource: str, namespace: str | None, name: str | None
    ) -> bool:
        for grant in self.grants:
            if namespace is None and grant.namespaces is not None:
                continue  # a RoleBinding grants nothing cluster-scoped
            if grant.namespaces is not None and namespace not in grant.namespaces:
                continue
            for rule in grant.rules:
                if (
                    group in rule["apiGroups"]
                    and resource in rule["resources"]
                    and verb in rule["verbs"]
                    and (not rule.get("resourceNames") or name in rule["resourceNames"])
                ):
                    return True
        return False

    def refusal(
        self, verb: str, group: str, resource: str, namespace: str | None, name: str | None
    ) -> str:
        """kube-apiserver's RBAC message for a refused request."""
        plural, _, sub = resource.partition("/")
        what = f"{plural}.{group}" if group else plural
        named = f' "{name}"' if name else ""
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        return (
            f'{what}{named} is forbidden: User "{self.user}" cannot {verb} resource '
            f'"{resource}" in API group "{group}" {scope}'
        )


def _verb(request: kmock.Request) -> str:
    method = str(request.method.value)
    if method == "GET":
        return {kmock.action.LIST: "list", kmock.action.WATCH: "watch"}.get(request.action, "get")  # type: ignore[arg-type]
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


def _blocking_owners(obj: Any) -> list[dict[str, Any]]:
    refs = (
        ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
        if isinstance(obj, dict)
        else []
    )
    return [ref for ref in refs if ref.get("blockOwnerDeletion")]


def authorize(rbac: Rbac, request: kmock.Request, objects: Any, resources: Any) -> None:
    """RBAC, then the OwnerReferencesPermissionEnforcement admission plugin: 403 if refused."""
    resource = request.resource.plural + (
        f"/{request.subresource}"  # type: ignore[union-attr]
        if request.subresource
        else ""
    )
    group = request.resource.group or ""  # type: ignore[union-attr]
    verb = _verb(request)
    name = request.name
    if name is None and isinstance(request.data, dict):
        name = (request.data.get("metadata") or {}).get("name")
    if not rbac.allows(verb, group, resource, request.namespace, request.name):
        raise kmock_k8s.KubernetesError(
            status=403,
            reason="Forbidden",
            message=rbac.refusal(verb, group, resource, request.namespace, request.name),
        )
    if not rbac.owner_references or verb not in ("create", "update", "patch"):
        return
    key = (request.resource, request.namespace, request.name)
    current = objects[key].raw if request.name and key in objects else None
    had = {(r.get("kind"), r.get("name")) for r in _blocking_owners(current)}
    data = request.data
    new = (
        data
        if isinstance(data, dict)
        else {
            "metadata": {
                "ownerReferences": [
                    op.get("value")
                    for op in data or []
                    if "ownerReferences" in str(op.get("path"))
                    and isinstance(op.get("value"), dict)
                ]
            }
        }
    )
    for ref in _blocking_owners(new):
        if (ref.get("kind"), ref.get("name")) in had:
            continue
        owner_group = ref["apiVersion"].rpartition("/")[0]
        plurals = [
            res.plural
            for res, info in resources.items()
            if info.kind == ref["kind"] and (res.group or "") == owner_group
        ]
        for plural in plurals:
            if not rbac.allows(
                "update", owner_group, f"{plural}/finalizers", request.namespace, ref["name"]
            ):
                what = f"{resource.partition('/')[0]}.{group}".rstrip(".")
                raise kmock_k8s.KubernetesError(
                    status=403,
                    reason="Forbidden",
                    message=(
                        f'{what} "{name}" is forbidden: cannot set blockOwnerDeletion if an '
                        "ownerReference refers to a resource you can't set finalizers on: , "
                        "<nil>"
                    ),
                )
