"""A real terminal for `draftgen top`: a detached tmux session of a fixed size on a private tmux
server, keys sent with `send-keys`, the screen read with `capture-pane -p`."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence

import pytest

from tests.operator.harness import wait_for

EXIT_MARK = "TOP-EXITED-WITH="


class Tmux:
    """One tmux server (`-L`) for a test module; each `start()` is a session running a command
    that prints EXIT_MARK and its exit status when it ends, and stays on screen."""

    def __init__(self, width: int = 120, height: int = 40) -> None:
        if shutil.which("tmux") is None:
            pytest.skip("tmux is missing: run scripts/setup_system.sh")
        self.socket = f"draftgen-test-{uuid.uuid4().hex[:8]}"
        self.width, self.height = width, height

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout

    def start(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """`argv` in a new session `name` (the tmux server has this process's environment; `env`
        adds to it)."""
        extra = {"PYTHONUNBUFFERED": "1", **(env or {})}
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in extra.items())
        # COLUMNS/LINES of the test's own terminal would override the pane's size. The shell
        # outlives a Ctrl-C to report the exit status (a trap, not an ignore: the command gets
        # SIGINT's default back).
        command = (
            f"trap : INT; unset COLUMNS LINES; env {exports} {shlex.join(argv)}; "
            f"echo {EXIT_MARK}$?; sleep 3600"
        )
        self._tmux(
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "sh",
            "-c",
            command,
        )

    def screen(self, name: str) -> str:
        return self._tmux("capture-pane", "-p", "-t", f"={name}:")

    def keys(self, name: str, *keys: str) -> None:
        self._tmux("send-keys", "-t", f"={name}:", *keys)

    def wait_screen(self, name: str, text: str, timeout: float = 120.0) -> str:
        def shown() -> str | None:
            screen = self.screen(name)
            return screen if text in screen else None

        return wait_for(
            shown,
            f"{text!r} on the screen of {name}",
            timeout,
        )

    def exit_status(self, name: str, timeout: float = 30.0) -> int:
        screen = self.wait_screen(name, EXIT_MARK, timeout)
        return int(screen.split(EXIT_MARK, 1)[1].split()[0])

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


TOP = [sys.executable, "-m", "draftgen.cli", "top"]


def dataset_rows(screen: str, names: Sequence[str]) -> dict[str, dict[str, str]]:
    """The figures of each dataset's row, by column name, as the screen shows them."""
    columns = ("%", "completion", "prompt", "samples", "tok/s", "ETA", "trunc", "rejects")
    out = {}
    for line in screen.splitlines():
        words = line.split()
        if words and words[0] in names:
            out[words[0]] = dict(zip(columns, words[-len(columns) :]))
    return out
