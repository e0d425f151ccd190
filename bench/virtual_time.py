"""Run a coroutine on an event loop whose clock jumps over idle time, so that a simulated server
decoding for hours (`bench/kv_server.py`) takes seconds, while the code under test — the
generator, its admission, its timers and `time.monotonic()` readings — sees consistent time.

The loop's clock is the real monotonic clock plus an offset. When the loop would sleep until
its next timer and no I/O is ready, the offset grows by that sleep instead: CPU time still
counts (1:1), waiting costs nothing. `time.monotonic` is replaced by the same clock while the
coroutine runs, so code that reads it directly agrees with the loop.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Coroutine
from typing import Any

_real_monotonic = time.monotonic


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list:  # type: ignore[override]
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        ready = super().select(0)
        if not ready:
            self._clock.offset += timeout
        return ready


class VirtualClock:
    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return _real_monotonic() + self.offset


class _Loop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(_JumpingSelector(clock))
        self._clock = clock

    def time(self) -> float:
        return self._clock.now()


def run(coro: Coroutine[Any, Any, Any]) -> tuple[Any, float]:
    """Run `coro` in virtual time: (its result, virtual seconds it took)."""
    clock = VirtualClock()
    loop = _Loop(clock)
    time.monotonic = clock.now  # type: ignore[assignment]
    start = clock.now()
    try:
        result = loop.run_until_complete(coro)
        return result, clock.now() - start
    finally:
        time.monotonic = _real_monotonic  # type: ignore[assignment]
        loop.close()
