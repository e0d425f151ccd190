"""The operator tests' Kubernetes emulator with an unreliable API: now and then (seeded) a request
from the operator fails with 409 Conflict or 500, sometimes *after* the write was applied (the
answer was lost on the way back, the nastiest case for duplicates).

Watches and lists are left alone: they are kopf's plumbing, whose retries are kopf's own
business; every request that decides or changes something may fail."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import attrs
import kmock
from kmock._internal import k8s as kmock_k8s

from tests.operator.emulator import DraftgenEmulator, EmulatorThread
from tests.operator.harness import _KUBECONFIG

OPERATOR_AGENTS = ("kopf/", "draftgen-operator")


@attrs.define(kw_only=True)
class FlakyEmulator(DraftgenEmulator):
    """`fail_rate` of the operator's get/create/patch/delete requests fail; `injected` logs them."""

    fail_rate: float = 0.0
    seed: int = 0
    injected: list = attrs.field(factory=list, init=False)
    _rng: Any = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._rng = random.Random(self.seed)

    async def _handle(self, request: kmock.Request):  # type: ignore[override]
        agent = request.headers.get("User-Agent", "")
        eligible = (
            request.resource is not None
            and agent.startswith(OPERATOR_AGENTS)
            and request.action not in (kmock.action.WATCH, kmock.action.LIST)
        )
        if not eligible or self._rng.random() >= self.fail_rate:
            return await super()._handle(request)
        writes = request.action in (kmock.action.CREATE, kmock.action.UPDATE, kmock.action.DELETE)
        # Writes: a conflict, a failure, or a failure *after* the write was applied, equally.
        status, lost_answer = (
            self._rng.choice([(409, False), (500, False), (500, True)]) if writes else (500, False)
        )
        what = f"{request.method.value} {request.resource.plural}/{request.name or ''}"
        self.injected.append((status, "after" if lost_answer else "before", what))
        if lost_answer:
            await super()._handle(request)  # the write happened; the answer is lost
        error = kmock_k8s.KubernetesError(
            status=status, reason="Injected", message=f"injected {status} for {what}"
        )
        return await self._render_error(error)


class FlakyEmulatorThread(EmulatorThread):
    """EmulatorThread serving a FlakyEmulator; `fail_rate` can change while it runs."""

    def __init__(self, workdir: Path, fail_rate: float, seed: int) -> None:
        # The harness's kubeconfig: its `running_operator` points kopf and the operator at it.
        super().__init__(workdir, kubeconfig=_KUBECONFIG)
        self._fail_rate, self._seed = fail_rate, seed

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with (
            FlakyEmulator(fail_rate=self._fail_rate, seed=self._seed) as emulator,
            kmock.Server(emulator, host="127.0.0.1") as srv,
        ):
            self.emulator = emulator
            self.url = str(srv.url).rstrip("/")
            self._ready.set()
            await self._stop.wait()

    def set_fail_rate(self, rate: float) -> None:
        self.call(lambda: setattr(self.emulator, "fail_rate", rate))

    def injected(self) -> list:
        return self.call(lambda: list(self.emulator.injected))
