"""A thin Kubernetes API client: plain dicts over HTTP, retries with backoff, typed errors.

Credentials come from the `kubernetes` package's loaders (in-cluster service account, else the
kubeconfig at `$KUBECONFIG`, read when the operator starts, not at import). Objects stay dicts:
the renderers produce dicts and the tests compare dicts, so no model classes sit in between.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from typing import Any

import httpx

log = logging.getLogger(__name__)

USER_AGENT = "draftgen-operator"
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class KubeError(Exception):
    """The API refused a request; `status` is the HTTP status (0 when unreachable)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"Kubernetes API {status}: {message}")

    @property
    def retryable(self) -> bool:
        return self.status == 0 or self.status in RETRY_STATUS


# kind → (API path prefix, plural) of everything the operator touches.
RESOURCES: dict[str, tuple[str, str]] = {
    "Deployment": ("/apis/apps/v1", "deployments"),
    "Service": ("/api/v1", "services"),
    "ConfigMap": ("/api/v1", "configmaps"),
    "Job": ("/apis/batch/v1", "jobs"),
    "Pod": ("/api/v1", "pods"),
    "Secret": ("/api/v1", "secrets"),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies"),
    "GenerationJob": ("/apis/draftgen.io/v1alpha1", "generationjobs"),
    # Multi-node servers (operator/render/leaderworkerset.py), when the chart enables them.
    "LeaderWorkerSet": ("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
}


def path(kind: str, namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    prefix, plural = RESOURCES[kind]
    out = f"{prefix}/namespaces/{namespace}/{plural}"
    if name:
        out += f"/{name}"
    if subresource:
        out += f"/{subresource}"
    return out


class Kube:
    """Synchronous client (kopf runs sync handlers in its thread pool)."""

    def __init__(
        self,
        host: str,
        *,
        token_fn=None,
        verify: Any = True,
        timeout: float = 30.0,
        attempts: int = 4,
        backoff: float = 0.5,
    ) -> None:
        self._token_fn = token_fn
        self._attempts = attempts
        self._backoff = backoff
        self._http = httpx.Client(base_url=host.rstrip("/"), verify=verify, timeout=timeout)

    @classmethod
    def from_environment(cls, **options: Any) -> Kube:
        """In-cluster credentials, else `$KUBECONFIG` (or ~/.kube/config), read now; `options`
        as the constructor takes them (`attempts`, `timeout`)."""
        from kubernetes import client, config

        cfg = client.Configuration()
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)
        else:
            kubeconfig = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
            config.load_kube_config(
                config_file=kubeconfig.split(os.pathsep)[0], client_configuration=cfg
            )

        def token() -> str | None:
            # The loaders store "Bearer <token>" under BearerToken (this call also refreshes
            # expiring tokens: exec plugins, rotated service-account tokens).
            value = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
            if not value:
                return None
            return value if value.lower().startswith("bearer ") else f"Bearer {value}"

        return cls(cfg.host, token_fn=token, verify=_tls_context(cfg), **options)

    def close(self) -> None:
        self._http.close()

    # -- HTTP with retries -------------------------------------------------------------------
    def _request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: dict | None = None,
        content_type: str | None = None,
        text: bool = False,
    ) -> Any:
        headers = {"Accept": "*/*" if text else "application/json", "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        if self._token_fn is not None and (token := self._token_fn()):
            headers["Authorization"] = token
        delay = self._backoff
        for attempt in range(1, self._attempts + 1):
            try:
                rsp = self._http.request(method, url, json=json, params=params, headers=headers)
            except httpx.HTTPError as err:
                error = KubeError(0, f"{method} {url}: {err}")
            else:
                if rsp.status_code < 400:
                    if text:
                        return rsp.text
                    return rsp.json() if rsp.content else {}
                try:
                    message = rsp.json().get("message") or rsp.text
                except ValueError:
                    message = rsp.text
                error = KubeError(rsp.status_code, f"{method} {url}: {str(message)[:500]}")
            if not error.retryable or attempt == self._attempts:
                raise error
            log.debug("retrying %s %s after %s (attempt %d)", method, url, error, attempt)
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    # -- verbs ------------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return self._request("GET", path(kind, namespace, name))
        except KubeError as err:
            if err.status == 404:
                return None
            raise

    def serves(self, kind: str) -> bool:
        """Whether the API server serves this kind (its CRD is installed): API discovery, which
        every authenticated client may read (no RBAC on CRDs needed)."""
        prefix, plural = RESOURCES[kind]
        try:
            found = self._request("GET", prefix)
        except KubeError as err:
            if err.status == 404:
                return False
            raise
        return any(r.get("name") == plural for r in found.get("resources") or [])

    def get_text(self, url: str) -> str:
        """A plain-text GET, e.g. a pod's `/metrics` through the API server's pod proxy."""
        return self._request("GET", url, text=True)

    def list(self, kind: str, namespace: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        """Objects whose labels match (filtered here too: not every API server filters)."""
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        data = self._request("GET", path(kind, namespace), params={"labelSelector": selector})
        items = data.get("items") or []
        return [o for o in items if _matches(o, labels)]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create; an object that already exists is returned as it is (idempotent)."""
        meta = obj["metadata"]
        try:
            return self._request("POST", path(obj["kind"], meta["namespace"]), json=obj)
        except KubeError as err:
            if err.status == 409:
                existing = self.get(obj["kind"], meta["namespace"], meta["name"])
                if existing is not None:
                    return existing
            raise

    def patch(
        self,
        kind: str,
        namespace: str,
        name: str,
        patch: dict[str, Any],
        subresource: str | None = None,
    ) -> dict[str, Any]:
        return self._request(
            "PATCH",
            path(kind, namespace, name, subresource),
            json=patch,
            content_type="application/merge-patch+json",
        )

    def replace(
        self,
        kind: str,
        namespace: str,
        name: str,
        field: str,
        value: Any,
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Set one top-level field wholesale (a merge patch would merge nested maps) and some
        annotations, in one atomic JSON patch."""
        ops = [{"op": "add", "path": f"/{field}", "value": value}]
        for key, val in (annotations or {}).items():
            ops.append(
                {
                    "op": "add",
                    "path": "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1"),
                    "value": val,
                }
            )
        return self._request(
            "PATCH",
            path(kind, namespace, name),
            json=ops,
            content_type="application/json-patch+json",
        )

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        """Delete; False when it was already gone. With `uid`, only that very object (the API
        refuses with 409 if the name now holds another one)."""
        options: dict[str, Any] = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": propagation,
        }
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            self._request("DELETE", path(kind, namespace, name), json=options)
            return True
        except KubeError as err:
            if err.status == 404:
                return False
            raise


def _tls_context(cfg: Any) -> ssl.SSLContext | bool:
    """The cluster CA and client certificate of a `kubernetes` Configuration, as httpx wants."""
    if not cfg.verify_ssl:
        return False
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


def _matches(obj: dict[str, Any], labels: dict[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())
