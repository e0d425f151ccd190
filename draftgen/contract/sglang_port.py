"""The port SGLang's HTTP server listens on: whether it is free before a start, and the line its
log shows when the bind failed at the end of a start.

Why both: SGLang binds its HTTP port last, after the model is loaded (minutes on a GPU box), and
when the bind fails (uvicorn's "[Errno 98] error while attempting to bind on address ...") the
process does not exit: it stays up, serving nothing, and a health wait runs to its timeout. A
check before the start catches a port already taken; the log line catches one taken during the
load. Standard library only (the CPU test launcher imports it)."""

from __future__ import annotations

import socket
from pathlib import Path

BIND_FAILED = "error while attempting to bind on address"
"""uvicorn's log line when the HTTP port could not be bound (SGLang 0.5.23)."""


def port_taken(host: str, port: int) -> bool:
    """Whether binding `host:port` fails now (another process listens there). The check
    SO_REUSEADDR as uvicorn binds, so a port in TIME_WAIT after a stop counts as free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def bind_failed(log: Path, start: int = 0) -> bool:
    """Whether a server's log, read from byte `start` (where this start's lines begin: the log
    is appended to), says its HTTP port could not be bound. False while it cannot be read."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            return BIND_FAILED in f.read().decode("utf-8", "replace")
    except OSError:
        return False
