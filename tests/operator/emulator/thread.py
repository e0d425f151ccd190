"""The emulator on 127.0.0.1 in its own thread and event loop, a kubeconfig for it, and a sync
client for the tests: the state read in the emulator's own loop, the API over HTTP."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import kmock
import yaml

from .api import DraftgenEmulator
from .rbac import Rbac


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
            # Watches a test left open (an informer thread of a Reconciler it did not close)
            # would hold the server's shutdown for its whole grace period: end them first.
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

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

    def route_service(self, namespace: str, name: str, port: int, url: str) -> None:
        """Play a Service for the admission webhooks: `namespace/name:port` reaches `url`."""

        def add():
            self.emulator.routes.setdefault((namespace, name), {})[port] = url  # type: ignore[union-attr]

        self.call(add)

    def requests(self) -> list[dict[str, Any]]:
        """Every Kubernetes request so far: arrival time (epoch seconds), method, action, group,
        plural, subresource, namespace, name (or the created object's name), user agent, query
        parameters (`params`), and the body as sent (`data`)."""

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
                        "params": dict(r.params),
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
