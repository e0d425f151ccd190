"""The feed of one dataset: a thread runs the input side's iterator (tokenizing is CPU work) and
hands its samples and rejects to the event loop through a bounded queue, so the loop never waits
for the tokenizer."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from draftgen.generator.prompts.samples import Reject, Sample


class Feed:
    """Samples of one dataset, produced by a thread running the input side's iterator."""

    _END = object()

    def __init__(self, make: Callable[[], Iterator], wake: Callable[[], None]) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=256)
        self._stop = threading.Event()
        self._wake = wake
        self.error: BaseException | None = None
        self.finished = False
        self._thread = threading.Thread(target=self._run, args=(make,), daemon=True)
        self._thread.start()

    def _run(self, make: Callable[[], Iterator]) -> None:
        it = None
        try:
            it = make()
            for item in it:
                while not self._stop.is_set():
                    try:
                        self._queue.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    break
                self._wake()
        except BaseException as err:
            self.error = err
        finally:
            if it is not None and hasattr(it, "close"):
                try:
                    it.close()
                except Exception:
                    pass
            while True:  # the end marker must arrive, unless nobody reads any more
                try:
                    self._queue.put(self._END, timeout=0.2)
                    break
                except queue.Full:
                    if self._stop.is_set():
                        break
            self._wake()

    def take(self) -> Sample | Reject | None:
        """The next item, or None when none is ready (or the feed ended: see `finished`)."""
        if self.finished:
            return None
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is self._END:
            self.finished = True
            return None
        return item

    def stop(self) -> None:
        self._stop.set()


async def in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a daemon thread. Unlike `asyncio.to_thread`, a stopped run does not wait
    for it: `asyncio.run` joins the default executor's threads at exit, so a preflight reading
    a large dataset would hold a Ctrl-C for as long as it reads."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def deliver(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def work() -> None:
        try:
            outcome: tuple[Callable[[Any], None], Any] = (future.set_result, fn(*args))
        except BaseException as err:
            outcome = (future.set_exception, err)
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:  # the run ended meanwhile: nobody waits for this any more
            pass

    threading.Thread(target=work, name="preflight", daemon=True).start()
    return await future
