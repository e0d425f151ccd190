"""Checks of `draftgen generate`'s arguments before anything starts: each problem is one line
naming the flag, what is wrong and the fix (the caller exits with `ExitCode.INVALID`), instead
of a traceback from deep inside the run.

- `--server`: a URL the HTTP client can use (http/https, a host); a credential in it is never
  echoed.
- `--output`: a directory, or a path where one can be made, on a writable filesystem (checked on
  the nearest existing ancestor, so nothing is created or repaired before the check).
- `--metrics-port`: a port in range that nothing else listens on.
"""

from __future__ import annotations

import errno
import os
import re
import socket
from pathlib import Path

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

_USERINFO = re.compile(r"(?<=//)[^/@]*@")


class ArgumentProblem(DraftgenError, ValueError):
    """An argument `draftgen generate` cannot run with; the message is the one line to print."""

    exit_code = ExitCode.INVALID
    fix = "fix the flag named"


def _redacted(url: str) -> str:
    return _USERINFO.sub("***@", url)


def check_server(url: str) -> None:
    import httpx

    shown = _redacted(url)
    why = None
    try:
        parsed = httpx.URL(url)
    except Exception:  # httpx.InvalidURL, and ValueError/TypeError from its parser
        try:
            httpx.URL(shown)
            why = "not a valid URL"
        except Exception as err:
            why = str(err).replace(url, shown) or "not a valid URL"
    else:
        if parsed.scheme not in ("http", "https"):
            why = f"scheme {parsed.scheme or 'missing'!r} is not http or https"
        elif not parsed.host:
            why = "no host"
    if why is not None:
        raise ArgumentProblem(
            f"--server {shown}: {why}; give the server's base URL, e.g. http://127.0.0.1:30000 "
            "or http://[::1]:30000"
        )


def check_output(output: Path) -> None:
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise ArgumentProblem(
            f"--output {output}: exists and is not a directory; name a directory (it is created "
            "if missing) or move the file away"
        )
    existing = output
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ArgumentProblem(
            f"--output {output}: {existing} is a file, not a directory; name another --output"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        why = os.strerror(errno.EROFS if read_only else errno.EACCES)
        raise ArgumentProblem(
            f"--output {output}: cannot write to {existing} ({why}); make it writable (or name "
            "another --output) and run the same command again; it resumes"
        )


def check_metrics_port(port: int | None) -> None:
    if not port:
        return
    if not 0 < port < 65536:
        raise ArgumentProblem(f"--metrics-port {port}: not a TCP port; give one in 1-65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the metrics server does
        try:
            sock.bind(("0.0.0.0", port))
        except OSError as err:
            what = (
                "is in use" if err.errno == errno.EADDRINUSE else f"cannot be used ({err.strerror})"
            )
            raise ArgumentProblem(
                f"--metrics-port {port}: the port {what}; choose another port, or stop what "
                "listens on it"
            ) from None


def check_arguments(servers: list[str], output: Path, metrics_port: int | None) -> None:
    """Raises `ArgumentProblem` for the first unusable argument."""
    for url in servers:
        check_server(url)
    check_output(output)
    check_metrics_port(metrics_port)


def write_problem(err: OSError) -> str | None:
    """The one line for an OS error writing the output (read-only, permissions), or None."""
    if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST):
        return None
    where = err.filename or "the output directory"
    return (
        f"--output: cannot write {where} ({err.strerror}); make the output directory writable "
        "(or name another --output) and run the same command again; it resumes"
    )
