"""The feed of one dataset: a thread runs the input side's iterator (tokenizing is CPU work) and
hands its samples and rejects to the event loop through a bounded queue, so the loop never waits
for the tokenizer."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

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
