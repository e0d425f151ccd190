"""A request's attempts against a server that failed: what is sent when it comes back."""

from __future__ import annotations

import asyncio
import socket

from draftgen.generator.prompts.samples import Sample
from draftgen.generator.scheduling.datasets import Flight
from draftgen.generator.sglang.attempts import attempt
from draftgen.generator.sglang.client import SGLangClient
from draftgen.generator.sglang.fleet import Server
from draftgen.generator.telemetry.metrics import GeneratorMetrics


class _ComesBackAsAnotherModel:
    """The fleet's side of a server that went away and came back serving another model (what
    `Fleet._watch_recovery` concludes, marking it retired and stopping the run)."""

    def server_failed(self, server: Server) -> None:
        server.healthy = False

    async def recovered(self, server: Server) -> None:
        server.retired = True


def test_nothing_is_sent_to_a_server_that_came_back_as_another_model():
    """Regression (seen in a fresh-clone run): the retry went out before the run's shutdown
    cancelled it, and the other model's server crashed on ids outside its vocabulary."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens: the first attempt fails to connect

    async def go() -> tuple[object, int]:
        async with SGLangClient(f"http://127.0.0.1:{port}") as client:
            sent = 0
            generate = client.generate

            async def counting(*args, **kwargs):
                nonlocal sent
                sent += 1
                return await generate(*args, **kwargs)

            client.generate = counting  # type: ignore[method-assign]
            server = Server(client=client)
            sample = Sample(id="d/0/1", dataset="d", source_index=0, turn=1, input_ids=[163_584])
            outcome = await attempt(
                Flight(sample=sample, server=server, tokens=1.0),
                "d",
                {"max_new_tokens": 1},
                run_nonce="n",
                retries=3,
                backoff_base=0.001,
                fleet=_ComesBackAsAnotherModel(),  # type: ignore[arg-type]
                metrics=GeneratorMetrics(),
            )
            return outcome, sent

    outcome, sent = asyncio.run(go())
    assert outcome is None  # nothing is written, nothing rejected: the run is stopping
    assert sent == 1  # only the attempt before the failure
