"""Ways the operator tests look at the operator: one reconcile at a time (the code every kopf
handler runs), the RBAC rules as (group, resource, verb) triples, and an operator process's
liveness and metrics endpoints (tests/operator/test_cli, tests/image)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx

from .harness import GJ, Cluster, wait_for


@contextlib.contextmanager
def reconcile_steps(cluster: Cluster, **settings: Any) -> Iterator[Callable[..., dict]]:
    """One reconcile at a time, the code every kopf handler runs, against the emulator with
    these operator settings: `step(name)` reconciles the job, writes the status back as the
    status handler does, and returns it (so each transition can be read exactly when it
    happened)."""
    from draftgen.controller.kube import Kube
    from draftgen.controller.reconcile import JobRef, Reconciler
    from draftgen.controller.settings import OperatorSettings

    kube = Kube(cluster.emu.url, backoff=0.01)
    reconciler = Reconciler(kube, OperatorSettings(http_timeout_seconds=0.2, **settings))

    def step(name: str = "kimi") -> dict:
        fresh = kube.get("GenerationJob", cluster.ns, name)
        assert fresh is not None
        outcome = reconciler.reconcile(JobRef(body=fresh))
        cluster.emu.patch(
            GJ, "generationjobs", cluster.ns, name, {"status": outcome.status}, subresource="status"
        )
        return outcome.status

    try:
        yield step
    finally:
        kube.close()


def rule_triples(rules: Iterable[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (apiGroup, resource, verb) the RBAC rules grant."""
    return {
        (g, r, v)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def wait_live(port: int, timeout: float = 30.0) -> None:
    """Until an operator process answers on kopf's liveness endpoint (`--liveness`)."""
    url = f"http://127.0.0.1:{port}/healthz"
    wait_for(lambda: httpx.get(url).status_code == 200, "kopf's liveness endpoint", timeout)


def operator_metrics(port: int, needle: str, timeout: float = 30.0) -> str:
    """An operator process's metrics page (`--metrics-port`), once it shows `needle`."""
    url = f"http://127.0.0.1:{port}/metrics"
    return wait_for(
        lambda: (text := httpx.get(url).text) and needle in text and text,
        "the operator's metrics",
        timeout,
    )
