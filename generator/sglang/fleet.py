"""The SGLang servers of one run: joining them (health, capacity from `/get_server_info`, the
tokenizer check), servers that join late, their live load from `/metrics`, the in-flight gauges,
and waiting out a server that failed until it is healthy again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.server_info import context_problem, model_len, parse_server_info
from draftgen.errors import RunError
from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.generator.scheduling.room import ServerView
from draftgen.generator.sglang.client import (
    BadResponse,
    ServerLoad,
    ServerUnavailable,
    SGLangClient,
    SGLangError,
)
from draftgen.generator.telemetry.metrics import GeneratorMetrics

log = logging.getLogger("draftgen.generate")

IDENTITY_FIELDS = ("model_path", "tokenizer_path", "served_model_name", "revision")
"""`/get_server_info` fields that name what a server serves."""


def model_identity(info: Any) -> dict[str, Any]:
    """The model a server serves, from its `/get_server_info` answer."""
    body = info if isinstance(info, dict) else {}
    return {k: body.get(k) for k in IDENTITY_FIELDS}


class ServersDown(RunError):
    """No server became healthy."""

    exit_code = ExitCode.SERVERS_DOWN


@dataclass
class Server:
    """One server: its capacity, its load as last read, and what this run has in flight on it."""

    client: SGLangClient
    kv_tokens: int = 1
    max_running: int | None = None
    load: ServerLoad | None = None
    in_flight: int = 0
    in_flight_tokens: float = 0.0
    healthy: bool = True
    metrics_ok: bool = True
    max_prompt: int | None = None
    recovery: asyncio.Task | None = None
    """Waits for the server's health after a failure (see `Fleet.server_failed`)."""
    identity: dict[str, Any] | None = None
    """What the server said it serves when it joined (`model_identity`); compared again after
    every reconnection."""
    retired: bool = False
    """It came back serving another model (or could not say what it serves): nothing more is
    ever sent to it — another model's ids can crash its scheduler — and the run is stopping."""

    def view(self, now: float) -> ServerView:
        load = self.load if self.load is not None and now - self.load.at < 5.0 else None
        return ServerView(
            kv_tokens=self.kv_tokens,
            max_running=self.max_running,
            in_flight=self.in_flight,
            in_flight_tokens=self.in_flight_tokens,
            healthy=self.healthy,
            queue=load.num_queue_reqs if load else None,
            running=load.num_running_reqs if load else None,
            token_usage=load.token_usage if load else None,
        )

    async def abort_quietly(self, rid: str) -> None:
        """Ask the server to stop a request; an error means there is nothing left to stop."""
        try:
            await self.client.abort(rid)
        except SGLangError:
            pass


class Fleet:
    """Every server of the run. `wake` asks the run's loop to decide again; `on_fatal` stops the
    run (a late joiner that serves another model)."""

    def __init__(
        self,
        urls: list[str],
        *,
        request_timeout: float,
        transport: httpx.AsyncBaseTransport | None,
        health_timeout: float,
        metrics_interval: float,
        tokenizer: Any,
        special_tokens: list[str],
        metrics: GeneratorMetrics,
        wake: Callable[[], None],
        on_fatal: Callable[[BaseException], None],
        completions: dict[str, int] | None = None,
    ) -> None:
        self.servers = [
            Server(SGLangClient(u, timeout=request_timeout, transport=transport)) for u in urls
        ]
        self.max_prompt_tokens: int | None = None
        """The shortest `max_req_input_len` of the servers healthy at start."""
        self._health_timeout = health_timeout
        self._metrics_interval = metrics_interval
        self._tokenizer = tokenizer
        self._special_tokens = special_tokens
        self._metrics = metrics
        self._wake = wake
        self._on_fatal = on_fatal
        self._late_joiners: set[asyncio.Task] = set()
        self._completions = completions or {}
        """Each dataset's `maxNewTokens`, checked against every server's context at join."""

    # ---- joining --------------------------------------------------------------------------

    async def check(self) -> None:
        """Start as soon as one server is healthy and checked; the others join when they are
        (replicas come up at different times). No healthy server within the timeout: stop."""
        pending = {asyncio.create_task(self._join(s)): s for s in self.servers}
        for server in self.servers:
            server.healthy = False
        error: BaseException | None = None
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                pending.pop(task)
                if task.exception() is not None:
                    error = task.exception()
                    if isinstance(error, IntegrityError):
                        for other in pending:
                            other.cancel()
                        raise error
            if any(s.healthy for s in self.servers):
                break
        if not any(s.healthy for s in self.servers):
            if isinstance(error, ServerUnavailable):
                raise ServersDown(str(error)) from error
            raise error or ServersDown("no server given")
        self._late_joiners = set(pending)
        for task in pending:
            task.add_done_callback(self._late_join_done)
        limits = [s.max_prompt for s in self.servers if s.healthy and s.max_prompt]
        self.max_prompt_tokens = min(limits) if limits else None

    def _late_join_done(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        err = task.exception()
        if isinstance(err, IntegrityError):
            self._on_fatal(err)
        elif err is not None:
            log.warning("going on without a server: %s", err)

    async def _join(self, server: Server) -> None:
        """Wait for one server's health, read its capacity, compare its tokenizer with ours."""
        await server.client.wait_healthy(self._health_timeout)
        raw = await server.client.server_info()
        info = parse_server_info(raw)
        server.identity = model_identity(raw)
        server.kv_tokens = info.kv_tokens or 1
        server.max_running = info.max_running_requests
        server.max_prompt = info.max_prompt_tokens
        if info.context_length is None and self._completions:
            info = replace(info, context_length=await self._model_len(server))
        problem = context_problem(info, self._completions)
        if problem is not None:
            raise IntegrityError(f"{server.client.url}: {problem}")
        if info.skip_tokenizer_init:
            log.warning(
                "%s runs with --skip-tokenizer-init: its tokenizer cannot be compared",
                server.client.url,
            )
        elif self._tokenizer is not None:
            await check_server_tokenizer(server.client, self._tokenizer, self._special_tokens)
        log.info(
            "%s: KV pool %d tokens, max running requests %s, longest prompt %s",
            server.client.url,
            server.kv_tokens,
            server.max_running,
            server.max_prompt,
        )
        server.healthy = True
        self._wake()

    async def _model_len(self, server: Server) -> int | None:
        """The server's effective context from `/v1/models`; None if it does not say."""
        try:
            return model_len(await server.client.models())
        except SGLangError as err:
            log.info("%s: no context length from /v1/models (%s)", server.client.url, err)
            return None

    # ---- failures -------------------------------------------------------------------------

    def server_failed(self, server: Server) -> None:
        """Take the server out of admission until its health comes back."""
        server.healthy = False
        if server.recovery is None or server.recovery.done():
            server.recovery = asyncio.create_task(self._watch_recovery(server))

    async def _watch_recovery(self, server: Server) -> None:
        try:
            await server.client.wait_healthy(self._health_timeout)
            # A server back behind the same URL may be another one (restarted with another
            # model): check what it serves before anything more is sent to it.
            await self._recheck(server)
            log.info("%s is healthy again (same model and tokenizer)", server.client.url)
        except IntegrityError as err:
            log.error("%s", err)
            server.retired = True
            self._on_fatal(err)  # stays out of admission; the run stops and writes nothing more
            return
        except ServerUnavailable as err:
            log.error("%s", err)
        except SGLangError as err:
            log.error(
                "%s: cannot check what it serves after reconnecting: %s", server.client.url, err
            )
            server.retired = True
            self._on_fatal(
                IntegrityError(
                    f"{server.client.url} came back but its model cannot be checked ({err}); "
                    "run the same command again once the server answers /get_server_info"
                )
            )
            return
        server.healthy = True  # retries decide from here; a dead server fails them
        self._wake()

    async def _recheck(self, server: Server) -> None:
        """The identity and tokenizer checks of `_join`, again: IntegrityError on a change."""
        raw = await server.client.server_info()
        now = model_identity(raw)
        before = server.identity
        if before is not None and now != before:
            changed = [k for k in IDENTITY_FIELDS if now.get(k) != before.get(k)]
            raise IntegrityError(
                f"{server.client.url} came back serving another model ("
                + ", ".join(f"{k} {before.get(k)!r} -> {now.get(k)!r}" for k in changed)
                + "): samples of two models would be mixed; point --server at a server of "
                "the job's model and run the same command again to resume"
            )
        info = parse_server_info(raw)
        if not info.skip_tokenizer_init and self._tokenizer is not None:
            await check_server_tokenizer(server.client, self._tokenizer, self._special_tokens)

    async def recovered(self, server: Server) -> None:
        """Wait until a failed server's recovery watch ends (or the run stops)."""
        if server.recovery is not None:
            try:
                await asyncio.shield(server.recovery)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if server.recovery.cancelled() and not (task and task.cancelling()):
                    return  # the run is stopping: the attempt loop sees `cancelled`
                raise

    # ---- load and gauges ------------------------------------------------------------------

    async def poll_load(self) -> None:
        """Read every server's `/metrics` each `metrics_interval` seconds, until cancelled."""
        while True:
            for server in self.servers:
                if not server.metrics_ok:
                    continue
                try:
                    server.load = await server.client.metrics()
                except BadResponse:
                    server.metrics_ok = False
                    log.warning(
                        "%s has no /metrics (start it with --enable-metrics); "
                        "admission uses its KV pool size only",
                        server.client.url,
                    )
                except SGLangError:
                    server.load = None
            self._wake()
            await asyncio.sleep(self._metrics_interval)

    def update_gauges(self, server: Server) -> None:
        self._metrics.requests_in_flight.labels(server.client.url).set(server.in_flight)
        self._metrics.tokens_in_flight.labels(server.client.url).set(server.in_flight_tokens)

    # ---- shutdown -------------------------------------------------------------------------

    def stop_waiting(self) -> None:
        """Late joiners stop waiting; requests waiting for a dead server give up at once."""
        for task in self._late_joiners:
            task.cancel()
        for server in self.servers:
            if server.recovery is not None:
                server.recovery.cancel()

    async def aclose(self) -> None:
        await asyncio.gather(*(s.client.aclose() for s in self.servers))


async def check_server_tokenizer(
    client: SGLangClient, tokenizer: Any, special_tokens: list[str]
) -> None:
    """Refuse a server whose tokenizer splits text or special tokens differently from ours: its
    model would read different tokens from the ids we send."""
    probes = [
        "The quick brown fox jumps over the lazy dog. 12345 naïve café 東京",
        'def f(x):\n    return {"a": [1, 2]}\n',
    ]
    probes += list(special_tokens)
    try:
        theirs = await client.tokenize(probes)
    except BadResponse as err:
        log.warning("%s cannot tokenize (%s); skipping the tokenizer comparison", client.url, err)
        return
    ours = [list(tokenizer.encode(p, add_special_tokens=False)) for p in probes]
    for text, a, b in zip(probes, ours, theirs):
        if list(a) != list(b):
            raise IntegrityError(
                f"{client.url} tokenizes {text[:40]!r} as {b[:12]} but the job's tokenizer gives "
                f"{a[:12]}: the server serves a different model or tokenizer than "
                "spec.model.tokenizer; point --server at the right server or fix spec.model"
            )
