"""Validating admission webhooks, called as kube-apiserver calls them: for every CREATE and UPDATE
a stored ValidatingWebhookConfiguration's rules match, with an AdmissionReview of the object as it
would be stored (a patch already applied) and, for an UPDATE, the old one.

How the API server reaches a webhook is the part a real cluster showed differently
(/work/shared/notes/kubernetes-testing.md):
- `clientConfig.service` (namespace, name, port: default 443, path) goes to the Service's
  endpoints; here `routes` plays the Services: (namespace, name) → {service port: base URL}.
  No Service, or no such port on it, fails as kube-apiserver fails;
- `clientConfig.url` is dialled with the API server's own DNS, which does not know the cluster's
  `*.svc` names: those fail with "no such host"; any other host is dialled directly.
A call that fails refuses the request with `failurePolicy: Fail` (500, kube-apiserver's message)
and lets it through with `Ignore`; a denial answers the webhook's code (default 403) with
`admission webhook "NAME" denied the request: ...`. TLS: a `caBundle` is trusted when given;
tests serve plain HTTP."""

from __future__ import annotations

import base64
import ssl
import urllib.parse
import uuid
from typing import Any

import httpx
from kmock._internal import k8s as kmock_k8s

Routes = dict[tuple[str, str], dict[int, str]]
CLUSTER_DNS_SUFFIXES = (".svc", ".svc.cluster.local", ".cluster.local")


def _matches(rule: dict[str, Any], group: str, version: str, resource: str, op: str) -> bool:
    def has(values: Any, value: str) -> bool:
        return "*" in (values or []) or value in (values or [])

    return (
        has(rule.get("apiGroups"), group)
        and has(rule.get("apiVersions"), version)
        and has(rule.get("resources"), resource)
        and has(rule.get("operations"), op)
    )


def webhooks_for(
    configs: list[dict[str, Any]], group: str, version: str, resource: str, op: str
) -> list[dict[str, Any]]:
    """Every webhook of the stored configurations whose rules cover this request."""
    return [
        hook
        for config in configs
        for hook in config.get("webhooks") or []
        if any(_matches(r, group, version, resource, op) for r in hook.get("rules") or [])
    ]


def _target(hook: dict[str, Any], routes: Routes) -> str:
    """The URL the API server posts to, or RuntimeError with kube-apiserver's reason."""
    cc = hook.get("clientConfig") or {}
    if cc.get("service"):
        svc = cc["service"]
        ns, name, port = svc.get("namespace"), svc.get("name"), int(svc.get("port") or 443)
        shown = f"https://{name}.{ns}.svc:{port}{svc.get('path') or ''}"
        if (ns, name) not in routes:
            raise RuntimeError(f'Post "{shown}": service "{name}" not found')
        if port not in routes[(ns, name)]:
            raise RuntimeError(f'Post "{shown}": no service port {port} found for service "{name}"')
        return routes[(ns, name)][port].rstrip("/") + (svc.get("path") or "")
    url = cc.get("url") or ""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host.endswith(CLUSTER_DNS_SUFFIXES):
        raise RuntimeError(f'Post "{url}": dial tcp: lookup {host} on 127.0.0.53:53: no such host')
    return url


def _tls(hook: dict[str, Any]) -> ssl.SSLContext | bool:
    ca = (hook.get("clientConfig") or {}).get("caBundle")
    if not ca:
        return True
    return ssl.create_default_context(cadata=base64.b64decode(ca).decode())


async def admit(
    hooks: list[dict[str, Any]],
    routes: Routes,
    request: dict[str, Any],
) -> None:
    """Call each webhook with this AdmissionReview `request`; raise the API server's refusal."""
    for hook in hooks:
        name = hook.get("name") or ""
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": str(uuid.uuid4()), **request},
        }
        try:
            url = _target(hook, routes)
            async with httpx.AsyncClient(
                verify=_tls(hook), timeout=float(hook.get("timeoutSeconds") or 10)
            ) as client:
                rsp = await client.post(url, json=review)
            rsp.raise_for_status()
            response = rsp.json()["response"]
        except Exception as err:  # any failure to get an answer: failurePolicy decides
            if hook.get("failurePolicy", "Fail") == "Ignore":
                continue
            raise kmock_k8s.KubernetesError(
                status=500,
                reason="InternalError",
                message=(
                    f'Internal error occurred: failed calling webhook "{name}": '
                    f"failed to call webhook: {err}"
                ),
            ) from None
        if not response.get("allowed"):
            status = response.get("status") or {}
            raise kmock_k8s.KubernetesError(
                status=int(status.get("code") or 403),
                reason=status.get("reason") or "Forbidden",
                message=f'admission webhook "{name}" denied the request: '
                + str(status.get("message") or ""),
            )
