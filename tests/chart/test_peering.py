"""Operator replicas behind the chart elect exactly one active replica through kopf's real
peering logic, and a standby takes over when the active one's keep-alive goes. (kopf pauses
*every* operator that sees a live peer with the same priority: without distinct priorities two
replicas would both stand by forever.)"""

from __future__ import annotations

import asyncio
import datetime
import inspect

import pytest
from kopf._cogs.aiokits import aiotoggles
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.engines import peering

from draftgen.controller import cli

from .rendering import one, render

RESOURCE = references.Resource("kopf.dev", "v1", "clusterkopfpeerings", namespaced=False)


def _keepalive(priority: int, *, age_seconds: float = 0, lifetime: int = 60) -> dict:
    seen = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=age_seconds)
    return {"priority": priority, "lifetime": lifetime, "lastseen": seen.isoformat()}


def _paused(identity: str, priority: int, status: dict, name: str) -> bool:
    """Run kopf's handler of one peering-object update as replica `identity`."""

    async def go() -> bool:
        settings = configuration.OperatorSettings()
        settings.peering.name = name
        settings.peering.priority = priority
        toggle = aiotoggles.Toggle(False)
        event = {"type": "MODIFIED", "object": {"metadata": {"name": name}, "status": status}}
        try:
            # kopf then sleeps until a blocking peer would expire: not needed here.
            await asyncio.wait_for(
                peering.process_peering_event(
                    raw_event=event,
                    namespace=None,
                    resource=RESOURCE,
                    identity=identity,
                    settings=settings,
                    autoclean=False,
                    conflicts_found=toggle,
                    stream_pressure=asyncio.Event(),
                ),
                timeout=0.5,
            )
        except TimeoutError:
            pass
        return toggle.is_on()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def peering_name() -> str:
    docs = render()
    return one(docs, "KopfPeering")["metadata"]["name"]


def test_replicas_get_distinct_priorities_and_the_older_one_wins():
    older = cli.peering_priority()
    newer = cli.peering_priority()
    assert older > newer


def test_exactly_one_of_two_replicas_works(peering_name):
    a, b = cli.peering_priority(), cli.peering_priority()
    status = {"op-a": _keepalive(a), "op-b": _keepalive(b)}
    assert _paused("op-a", a, status, peering_name) is False
    assert _paused("op-b", b, status, peering_name) is True


def test_kopf_default_priority_would_pause_both(peering_name):
    """Why the operator sets a priority at all: equal priorities pause every replica."""
    status = {"op-a": _keepalive(0), "op-b": _keepalive(0)}
    assert _paused("op-a", 0, status, peering_name) and _paused("op-b", 0, status, peering_name)


def test_standby_takes_over_when_the_active_keepalive_expires(peering_name):
    a, b = cli.peering_priority(), cli.peering_priority()
    expired = {"op-a": _keepalive(a, age_seconds=90), "op-b": _keepalive(b)}
    assert _paused("op-b", b, expired, peering_name) is False
    removed = {"op-b": _keepalive(b)}  # a clean exit deletes the keep-alive at once
    assert _paused("op-b", b, removed, peering_name) is False


def test_the_cli_hands_the_priority_to_kopf():
    source = inspect.getsource(cli.run)
    assert "priority=peering_priority()" in source
