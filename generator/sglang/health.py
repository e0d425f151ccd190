"""Waiting for a server's `/health_generate`, saying what is awaited and why.

A refused connection and a 503 mean "not up yet" (a large model loads for 10–30 minutes): keep
waiting, and say so every `REPORT_EVERY` seconds. A 404, another 4xx, or a 200 that is not
SGLang's mean the URL points at something else (a `/v1` suffix, another service): waiting cannot
help, so fail at once with the fix."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import RunError

log = logging.getLogger("draftgen.generate")

HEALTH_PATH = "/health_generate"
REPORT_EVERY = 15.0
"""Seconds between two "still waiting" lines."""


class NotSGLang(RunError):
    """The URL answers, but not as an SGLang server's base URL does: waiting cannot help."""

    exit_code = ExitCode.INVALID
    fix = "give --server the SGLang server's base URL (http://HOST:PORT, no path)"


@dataclass(frozen=True)
class Probe:
    """One `GET /health_generate`: its HTTP status (None: no answer) and what went wrong."""

    status: int | None
    error: str = ""
    """The connection error's name and text, when there was no answer."""
    body: str = ""


def verdict(url: str, probe: Probe) -> tuple[str, str]:
    """(`ready` | `waiting` | `wrong`, what to say). Pure: the wait loop decides from it."""
    status = probe.status
    if status == 200:
        return "ready", f"{url} is ready"
    if status is None:
        error = probe.error.lower()
        if "refused" in error or "all connection attempts failed" in error:
            why = "connection refused: nothing listens there yet (the server may still be loading)"
        elif "name" in error and ("resolve" in error or "known" in error):
            why = f"the host name does not resolve ({probe.error})"
        elif "timeout" in error or "timed out" in error:
            why = "no answer in time (the server may be busy loading)"
        else:
            why = f"not reachable ({probe.error})"
        return "waiting", why
    if status in (502, 503, 504):
        return "waiting", f"HTTP {status}: the server is starting (loading the model)"
    if status >= 500:
        return "waiting", f"HTTP {status}: {probe.body[:120]!r}"
    if status == 404:
        fix = (
            "remove the path after host:port"
            if _has_path(url)
            else "is this an SGLang server (`python -m sglang.launch_server`)?"
        )
        return "wrong", (
            f"{url}{HEALTH_PATH} answered HTTP 404: not an SGLang server's base URL; "
            f"give --server the URL SGLang listens on, e.g. http://HOST:30000 ({fix})"
        )
    return "wrong", (
        f"{url}{HEALTH_PATH} answered HTTP {status} ({probe.body[:120]!r}): not SGLang's answer; "
        "give --server the base URL of an SGLang server (http://HOST:PORT)"
    )


def _has_path(url: str) -> bool:
    rest = url.split("://", 1)[-1]
    return "/" in rest.rstrip("/")


async def wait_until_healthy(
    url: str,
    probe: Callable[[], Awaitable[Probe]],
    timeout: float,
    *,
    interval: float = 1.0,
    report_every: float = REPORT_EVERY,
    on_timeout: Callable[[str], BaseException],
) -> None:
    """Probe until ready; say what is awaited at the first miss and every `report_every` s;
    `NotSGLang` at once on a wrong answer; `on_timeout(message)` is raised after `timeout`."""
    start = time.monotonic()
    deadline = start + timeout
    next_report = start
    while True:
        state, why = verdict(url, await probe())
        if state == "ready":
            if time.monotonic() - start >= report_every:
                log.info("%s is ready after %.0f s", url, time.monotonic() - start)
            return
        if state == "wrong":
            raise NotSGLang(why)
        now = time.monotonic()
        if now >= deadline:
            raise on_timeout(
                f"{url} did not become healthy (GET {HEALTH_PATH}) within {timeout:.0f} s; "
                f"last: {why}; check that the server is running and the URL is right"
            )
        if now >= next_report:
            log.info(
                "waiting for %s (GET %s to answer 200): %s; %.0f s of %.0f s",
                url,
                HEALTH_PATH,
                why,
                now - start,
                timeout,
            )
            next_report = now + report_every
        await asyncio.sleep(interval)
