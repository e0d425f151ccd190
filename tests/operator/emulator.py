"""kmock's KubernetesEmulator, made good enough for kopf, running in a background thread.

What the subclass adds (see /work/shared/notes/kubernetes-testing.md):
- `resourceVersion`, `uid`, `creationTimestamp` on create and a new `resourceVersion` on every
  patch (kopf's JSON patches start with a test of `/metadata/resourceVersion`), `generation`
  bumped when `spec` changes; a failed JSON-patch test answers 422 as a real API server does;
- `labelSelector` honoured on lists (equality terms only);
- watches that start where the list ended, as kopf expects (list, then watch from the list's
  `resourceVersion`): kmock's own watch re-sends every object as ADDED, and kopf, handling the
  same version twice, loses the race for its finalizer patch (422) and then waits for the next
  change of the object (the next status write, a poll interval later) — and it snapshots the
  objects before it subscribes to changes, so a change in between was lost;
- the GenerationJob discovery entry, with its `status` subresource, and the built-in kinds the
  operator uses;
- a request log that does not slow every request down: kmock matches each request against its
  reactions by walking every request it has ever served (O(n) per request: 13 ms per GET after
  500 requests, 145 ms after 3000), so kmock is shown only the requests in flight and the whole
  log lives in `served`.
- optionally (`Rbac`), authorization of the operator's requests against the rules the chart
  grants, and the `OwnerReferencesPermissionEnforcement` admission plugin's rule, with the real
  server's 403 messages;
- the kinds kopf manages when a real server serves them (MutatingWebhookConfiguration, kopf's
  peerings);
- the pod proxy (`GET .../pods/NAME:PORT/proxy/PATH`), forwarded to the pod's `status.podIP`
  as a real API server does (`draftgen top gj/NAME` reads the pods' `/metrics` through it).
What it still does not do: garbage collection, other admission, schema validation, controllers (no
ReplicaSet, no pod, no Job status appears by itself: tests patch those in).
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import attrs
import httpx
import jsonpatch
import kmock
import yaml
from kmock._internal import k8s as kmock_k8s

_POD_PROXY = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/:]+):(\d+)/proxy/(.*)$")

RESOURCES = {
    "v1/pods": dict(kind="Pod", namespaced=True, subresources={"status"}),
    "v1/services": dict(kind="Service", namespaced=True, subresources={"status"}),
    "v1/configmaps": dict(kind="ConfigMap", namespaced=True),
    "v1/secrets": dict(kind="Secret", namespaced=True),
    "networking.k8s.io/v1/networkpolicies": dict(kind="NetworkPolicy", namespaced=True),
    "v1/events": dict(kind="Event", namespaced=True),
    "v1/namespaces": dict(kind="Namespace", namespaced=False),
    "apps/v1/deployments": dict(
        kind="Deployment", namespaced=True, subresources={"status", "scale"}
    ),
    "batch/v1/jobs": dict(kind="Job", namespaced=True, subresources={"status"}),
    "apiextensions.k8s.io/v1/customresourcedefinitions": dict(
        kind="CustomResourceDefinition", namespaced=False
    ),
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": dict(
        kind="ValidatingWebhookConfiguration", namespaced=False
    ),
    # A real server serves it, so kopf's webhook management creates one too (it did not
    # here while the emulator lacked it, and the operator crash-looped on a real cluster).
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": dict(
        kind="MutatingWebhookConfiguration", namespaced=False
    ),
    "kopf.dev/v1/clusterkopfpeerings": dict(kind="ClusterKopfPeering", namespaced=False),
    "kopf.dev/v1/kopfpeerings": dict(kind="KopfPeering", namespaced=True),
    "draftgen.io/v1alpha1/generationjobs": dict(
        kind="GenerationJob",
        singular="generationjob",
        namespaced=True,
        shortnames={"gj"},
        subresources={"status"},
    ),
}
VERBS = {"get", "list", "watch", "create", "patch", "update", "delete"}


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


@attrs.define(kw_only=True)
class DraftgenEmulator(kmock.KubernetesEmulator):
    """The emulator plus the metadata bookkeeping a real API server does."""

    _counter: Any = attrs.field(factory=lambda: itertools.count(1), init=False)
    _last_version: int = attrs.field(default=0, init=False)
    _unstored: set[int] = attrs.field(factory=set, init=False)
    """Versions handed out to writes that are not stored yet (a list must not claim them)."""
    rbac: Rbac | None = None
    """When set, the operator's requests are authorized as a real server would (see Rbac)."""
    served: list[tuple[float, kmock.Request]] = attrs.field(factory=list, init=False)
    """(arrival time, request) of every request, in order (kmock's own list holds only those
    in flight)."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        for key, info in RESOURCES.items():
            self.resources[key] = kmock.ResourceInfo(verbs=VERBS, **info)
        self._requests = _InFlight(self.served)

    async def __call__(self, raw_request):  # type: ignore[override]
        try:
            return await super().__call__(raw_request)
        finally:
            self._requests.finish(raw_request)

    def _next_version(self) -> str:
        self._last_version = next(self._counter)
        self._unstored.add(self._last_version)
        return str(self._last_version)

    def _stored_up_to(self) -> int:
        """Every object whose version is at most this one is stored (or deleted)."""
        return min(self._unstored) - 1 if self._unstored else self._last_version

    async def _handle(self, request: kmock.Request):  # type: ignore[override]
        proxied = _POD_PROXY.match(request.url.path)
        if proxied is not None and str(request.method).upper().endswith("GET"):
            return await self._proxy_pod(*proxied.groups())
        version = None
        if (
            request.resource is not None
            and request.resource.plural
            and self.rbac is not None
            and request.headers.get("User-Agent", "").startswith(OPERATOR_AGENTS)
        ):
            self._authorize(self.rbac, request)
        if request.resource is not None:
            try:
                version = self._stamp(request)
            except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed) as err:
                raise kmock_k8s.KubernetesError(
                    status=422, reason="Invalid", message=str(err)
                ) from None
        try:
            return await super()._handle(request)
        finally:
            if version is not None:
                self._unstored.discard(int(version))

    async def _proxy_pod(self, namespace: str, name: str, port: str, path: str):
        """GET on a pod's port through the API server, answered as kube-apiserver answers:
        the pod's own reply, else 503 with the dial error (404 for no such pod)."""
        from aiohttp import web

        async with self._lock:
            pod = next(
                (
                    obj.raw
                    for (resource, ns, n), obj in self._objects.items()
                    if resource.plural == "pods"
                    and ns == namespace
                    and n == name
                    and not obj.deleted
                ),
                None,
            )
        ip = ((pod or {}).get("status") or {}).get("podIP")
        if pod is None:
            return web.json_response(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "NotFound",
                    "code": 404,
                    "message": f'pods "{name}" not found',
                },
                status=404,
            )
        try:
            async with httpx.AsyncClient(timeout=5.0) as client:
                rsp = await client.get(f"http://{ip}:{port}/{path}")
        except httpx.HTTPError as err:
            return web.Response(
                status=503, text=f"error trying to reach service: dial tcp {ip}:{port}: {err}"
            )
        return web.Response(
            status=rsp.status_code,
            body=rsp.content,
            headers={"Content-Type": rsp.headers.get("content-type", "text/plain")},
        )

    async def _serve_watch(self, request: kmock.Request):  # type: ignore[override]
        """kmock's watch, except: objects the client listed already (`resourceVersion`) are
        not sent again, and the subscription to changes is taken together with the snapshot
        (under the lock every write holds), so no change falls between the two."""
        yield b""  # the headers go out now, even if nothing happens for a while
        since = _version(dict(request.params).get("resourceVersion"))
        bus = self._buses[request.resource]
        async with self._lock:
            snapshot = [
                obj.raw
                for (resource, namespace, name), obj in self._objects.items()
                if not obj.deleted and _watched(request, resource, namespace, name)
            ]
            marker = await bus.mark()
        try:
            for raw in snapshot:
                if since is None or (_version(raw["metadata"].get("resourceVersion")) or 0) > since:
                    yield {"type": "ADDED", "object": raw}
            async for event in bus.stream(since=marker):
                meta = (event.get("object") or {}).get("metadata") or {}
                if _watched(request, request.resource, meta.get("namespace"), meta.get("name")):
                    yield event
        finally:
            await bus.unmark(marker)

    async def _serve_list(self, request: kmock.Request):  # type: ignore[override]
        version = self._stored_up_to()
        result = await super()._serve_list(request)
        result["metadata"] = {**(result.get("metadata") or {}), "resourceVersion": str(version)}
        selector = dict(request.params).get("labelSelector")
        if selector:
            terms = dict(term.split("=", 1) for term in selector.split(",") if "=" in term)
            result["items"] = [
                o
                for o in result["items"]
                if all(
                    ((o.get("metadata") or {}).get("labels") or {}).get(k) == v
                    for k, v in terms.items()
                )
            ]
        return result

    def _authorize(self, rbac: Rbac, request: kmock.Request) -> None:
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
        current = self.objects[key].raw if request.name and key in self.objects else None
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
                for res, info in self.resources.items()
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

    def _stamp(self, request: kmock.Request) -> str | None:
        """Metadata a real API server sets on a write; the new resourceVersion, if any."""
        data = request.data
        if request.action == kmock.action.CREATE and isinstance(data, dict):
            meta = data.setdefault("metadata", {})
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", _now())
            meta.setdefault("generation", 1)
            if request.namespace and not meta.get("namespace"):
                meta["namespace"] = request.namespace
            meta["resourceVersion"] = version = self._next_version()
            return version
        elif request.action == kmock.action.UPDATE and request.name is not None:
            key = (request.resource, request.namespace, request.name)
            current = (
                self.objects[key].raw
                if key in self.objects and not self.objects[key].deleted
                else None
            )
            if current is None:
                return None
            if isinstance(data, list):
                # Apply now to validate the `test` ops (422 on conflict), then stamp.
                jsonpatch.apply_patch(current, data, in_place=False)
            version = self._next_version()
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


class _InFlight(list):
    """kmock's request list, holding only the requests being served; each one is also logged
    in `log` on arrival. kmock appends here and scans this list for every request."""

    def __init__(self, log: list) -> None:
        super().__init__()
        self.log = log

    def append(self, request: kmock.Request) -> None:
        self.log.append((time.time(), request))
        super().append(request)

    def finish(self, raw_request: Any) -> None:
        self[:] = [r for r in self if r._raw_request is not raw_request]


def _version(value: Any) -> int | None:
    """A resourceVersion as a number (this emulator's are counters); None if it is not one."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _watched(
    request: kmock.Request, resource: Any, namespace: str | None, name: str | None
) -> bool:
    """Whether a watch request covers this object (a watch without a namespace sees all)."""
    return (
        resource == request.resource
        and (request.namespace is None or namespace == request.namespace)
        and (request.name is None or name == request.name)
    )


def _now() -> str:
    return (
        datetime.datetime.now(datetime.UTC)
        .replace(microsecond=0)
        .isoformat()
        .replace("+00:00", "Z")
    )


class EmulatorThread:
    """Runs the emulator on 127.0.0.1 in its own thread and event loop; a sync test client."""

    def __init__(
        self, workdir: Path, kubeconfig: Path | None = None, rbac: Rbac | None = None
    ) -> None:
        self.workdir = workdir
        self.rbac = rbac
        self.kubeconfig = kubeconfig or workdir / "kubeconfig"
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.emulator: DraftgenEmulator | None = None
        self.url = ""
        self._thread = threading.Thread(target=self._main, name="k8s-emulator", daemon=True)
        self.http: httpx.Client | None = None

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with (
            DraftgenEmulator(rbac=self.rbac) as emulator,
            kmock.Server(emulator, host="127.0.0.1") as srv,
        ):
            self.emulator = emulator
            self.url = str(srv.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()

    def start(self) -> EmulatorThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Kubernetes emulator did not start")
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "emulator",
                    "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
                    "users": [{"name": "tester", "user": {"token": "test-token"}}],
                    "contexts": [
                        {
                            "name": "emulator",
                            "context": {
                                "cluster": "emulator",
                                "user": "tester",
                                "namespace": "default",
                            },
                        }
                    ],
                }
            )
        )
        self.http = httpx.Client(base_url=self.url, timeout=10)
        return self

    def stop(self) -> None:
        if self.http is not None:
            self.http.close()
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    # -- reading the emulator's state safely (in its own loop) ------------------------------
    def call(self, fn, *args):
        async def run():
            return fn(*args)

        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    def requests(self) -> list[dict[str, Any]]:
        """Every Kubernetes request so far: arrival time (epoch seconds), method, action, group,
        plural, subresource, namespace, name (or the created object's name), user agent, and
        the body as sent (`data`)."""

        def collect():
            out = []
            for arrived, r in list(self.emulator.served):  # type: ignore[union-attr]
                if r.resource is None:
                    continue
                name = r.name
                if name is None and isinstance(r.data, dict):
                    name = (r.data.get("metadata") or {}).get("name")
                out.append(
                    {
                        "time": arrived,
                        "method": str(r.method.value),
                        "action": str(r.action.value).lower() if r.action is not None else None,
                        "group": r.resource.group or "",
                        "plural": r.resource.plural,
                        "subresource": r.subresource,
                        "namespace": r.namespace,
                        "name": name,
                        "agent": r.headers.get("User-Agent", ""),
                        "data": r.data,
                    }
                )
            return out

        return self.call(collect)

    def stored(self, plural: str, namespace: str, pick=lambda obj: obj["metadata"]["name"]) -> list:
        """`pick(object)` of each live object of `plural` in `namespace`, read in the emulator's
        own loop without HTTP: cheap enough to poll often without loading the emulator."""

        def collect():
            return [
                pick(obj.raw)
                for (resource, ns, _), obj in list(self.emulator.objects.items())  # type: ignore[union-attr]
                if resource.plural == plural and ns == namespace and not obj.deleted
            ]

        return self.call(collect)

    def creates(self, plural: str) -> list[str]:
        """Names of the objects of `plural` that came into existence, once per creation (a
        POST answered 409 because the object exists creates nothing and is not listed)."""

        def collect():
            out = []
            for (resource, _, name), obj in list(self.emulator.objects.items()):  # type: ignore[union-attr]
                if resource.plural != plural:
                    continue
                alive = False
                for version in obj.history:
                    if version is not None and not alive:
                        out.append(name)
                    alive = version is not None
            return sorted(out)

        return self.call(collect)

    # -- the API over HTTP, as a user or a controller would use it ---------------------------
    def get(self, api: str, plural: str, ns: str, name: str) -> dict | None:
        rsp = self.http.get(f"{api}/namespaces/{ns}/{plural}/{name}")  # type: ignore[union-attr]
        if rsp.status_code == 404:
            return None
        rsp.raise_for_status()
        return rsp.json()

    def list(self, api: str, plural: str, ns: str) -> list[dict]:
        rsp = self.http.get(f"{api}/namespaces/{ns}/{plural}")  # type: ignore[union-attr]
        rsp.raise_for_status()
        return rsp.json()["items"]

    def create(self, api: str, plural: str, ns: str, obj: dict) -> dict:
        rsp = self.http.post(f"{api}/namespaces/{ns}/{plural}", json=obj)  # type: ignore[union-attr]
        rsp.raise_for_status()
        return rsp.json()

    def patch(
        self, api: str, plural: str, ns: str, name: str, patch: dict, subresource: str | None = None
    ) -> dict:
        url = f"{api}/namespaces/{ns}/{plural}/{name}" + (f"/{subresource}" if subresource else "")
        rsp = self.http.patch(
            url,
            json=patch,  # type: ignore[union-attr]
            headers={"Content-Type": "application/merge-patch+json"},
        )
        rsp.raise_for_status()
        return rsp.json()

    def delete(self, api: str, plural: str, ns: str, name: str) -> None:
        rsp = self.http.delete(f"{api}/namespaces/{ns}/{plural}/{name}")  # type: ignore[union-attr]
        if rsp.status_code != 404:
            rsp.raise_for_status()
