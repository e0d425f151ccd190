"""Single key presses from a terminal without Enter (`q` quits), and the wait between refreshes.
Ctrl-C stays a signal (cbreak mode keeps ISIG), so it interrupts as everywhere else."""

from __future__ import annotations

import os
import select
import sys
import time
from typing import IO, Any


class Keys:
    """`with Keys() as keys: key = keys.wait(2.0)`: a key pressed within the wait, or None."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin
        self._saved: Any = None
        self._fd: int | None = None

    def __enter__(self) -> Keys:
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        if os.isatty(fd):
            import termios
            import tty

            self._fd = fd
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None and self._saved is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._fd = self._saved = None

    def wait(self, seconds: float) -> str | None:
        if self._fd is None:  # not a terminal: nothing to read keys from
            time.sleep(seconds)
            return None
        ready, _, _ = select.select([self._fd], [], [], seconds)
        if not ready:
            return None
        data = os.read(self._fd, 32)
        return data.decode(errors="replace")[:1] if data else None
