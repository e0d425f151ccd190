"""The emulator itself: kmock's KubernetesEmulator with a real API server's bookkeeping (versions,
lists that say how far they are stored, watches that start where the list ended), authorization,
and the pod proxy, each from its own module."""

from __future__ import annotations

import itertools
import time
from typing import Any

import attrs
import jsonpatch
import kmock
from kmock._internal import k8s as kmock_k8s

from .admission import Routes, admit, webhooks_for
from .proxy import POD_PROXY, proxy_pod
from .rbac import OPERATOR_AGENTS, Rbac, authorize
from .resources import RESOURCES, VERBS
from .stamp import stamp
from .validation import invalid, merged


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
    routes: Routes = attrs.field(factory=dict, init=False)
    """The Services admission webhooks are reached through: (namespace, name) → {port: base
    URL} (see `admission`)."""
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
        proxied = POD_PROXY.match(request.url.path)
        if proxied is not None and str(request.method).upper().endswith("GET"):
            return await self._proxy_pod(*proxied.groups())
        version = None
        if (
            request.resource is not None
            and request.resource.plural
            and self.rbac is not None
            and request.headers.get("User-Agent", "").startswith(OPERATOR_AGENTS)
        ):
            authorize(self.rbac, request, self.objects, self.resources)
        if request.resource is not None and request.action in (
            kmock.action.CREATE,
            kmock.action.UPDATE,
        ):
            await self._validate_and_admit(request)
        if request.resource is not None:
            try:
                version = stamp(request, self.objects, self._next_version)
            except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed) as err:
                raise kmock_k8s.KubernetesError(
                    status=422, reason="Invalid", message=str(err)
                ) from None
        try:
            return await super()._handle(request)
        finally:
            if version is not None:
                self._unstored.discard(int(version))

    async def _validate_and_admit(self, request: kmock.Request) -> None:
        """The pod rules (`validation`), then the validating webhooks (`admission`), on the
        object as this write would store it: 422, or the webhook's refusal, before storing."""
        res = request.resource
        assert res is not None
        creating = request.action == kmock.action.CREATE
        async with self._lock:
            key = (res, request.namespace, request.name)
            stored = self._objects[key] if not creating and key in self._objects else None
            current = stored.raw if stored is not None and not stored.deleted else None
            configs = [
                obj.raw
                for (resource, _, _), obj in self._objects.items()
                if resource.plural == "validatingwebhookconfigurations" and not obj.deleted
            ]
        if not creating and current is None:
            return  # 404 from kmock
        try:
            new = merged(current, request.data)
        except (jsonpatch.JsonPatchConflict, jsonpatch.JsonPatchTestFailed):
            return  # 422 from `stamp`
        if new is None:
            return
        if request.subresource is None and (message := invalid(res.plural, new)):
            raise kmock_k8s.KubernetesError(status=422, reason="Invalid", message=message)
        operation = "CREATE" if creating else "UPDATE"
        plural = res.plural + (f"/{request.subresource}" if request.subresource else "")
        hooks = webhooks_for(configs, res.group or "", res.version, plural, operation)
        if not hooks:
            return
        meta = new.get("metadata") or {}
        await admit(
            hooks,
            self.routes,
            {
                "kind": {"group": res.group or "", "version": res.version, "kind": new.get("kind")},
                "resource": {
                    "group": res.group or "",
                    "version": res.version,
                    "resource": res.plural,
                },
                "subResource": request.subresource,
                "name": meta.get("name"),
                "namespace": request.namespace or meta.get("namespace"),
                "operation": operation,
                "userInfo": {"username": request.headers.get("User-Agent", "")},
                "object": new,
                "oldObject": current,
                "dryRun": False,
            },
        )

    async def _proxy_pod(self, namespace: str, name: str, port: str, path: str):
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
        return await proxy_pod(pod, name, port, path)

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
