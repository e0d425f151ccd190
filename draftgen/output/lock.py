"""One writer per output directory.

Two `draftgen generate` runs on one output would each resume from the same records and then both
append: every record twice. A run therefore holds, for as long as it writes:

- an exclusive `flock` on `DIR/.draftgen.lock` (released by the kernel when the process dies,
  so a crash never leaves it behind), and
- a lease `DIR/.draftgen.lease` naming its owner (pid, host, a nonce) with a heartbeat rewritten
  every `heartbeat_seconds`. The lease is what protects shared volumes where `flock` does not
  reach across hosts (some NFS set-ups, object-store mounts). A lease whose heartbeat is older
  than `stale_seconds`, or whose owner is on this host and no longer runs, was left by a crash:
  it is taken over with a warning.

A second writer is refused with `OutputLocked`, naming the owner's pid and host.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import RunError

__all__ = [
    "LEASE_FILE",
    "LOCK_FILE",
    "OutputLock",
    "OutputLocked",
    "current_writer",
    "writer_gone",
]

log = logging.getLogger("draftgen.generate")

LOCK_FILE = ".draftgen.lock"
LEASE_FILE = ".draftgen.lease"


class OutputLocked(RunError):
    """Another run writes to this output directory."""

    exit_code = ExitCode.OUTPUT_LOCKED
    fix = "wait for the run named to end, or give another --output"


@dataclass(frozen=True)
class Lease:
    pid: int
    host: str
    nonce: str
    heartbeat_at: float

    @classmethod
    def read(cls, path: Path) -> Lease | None:
        """The lease in `path`; None when there is none or it is unreadable (a torn write)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                nonce=str(data["nonce"]),
                heartbeat_at=float(data["heartbeat_at"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def owner(self) -> str:
        return f"pid {self.pid} on host {self.host}"


def current_writer(directory: Path, stale_seconds: float = 60.0) -> str | None:
    """Who writes to `directory` now (`pid N on host H`), or None: its lock is held here, or
    its lease's heartbeat is fresh (another host). For readers: `export` of a running job."""
    lease = Lease.read(Path(directory) / LEASE_FILE)
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return lease.owner() if lease else "another process"
        except OSError:
            pass  # no flock here: the lease alone says
        finally:
            os.close(fd)
    fresh = lease is not None and time.time() - lease.heartbeat_at < stale_seconds
    if lease and fresh and (lease.host != socket.gethostname() or _pid_alive(lease.pid)):
        return lease.owner()
    return None


def writer_gone(directory: Path, stale_seconds: float = 60.0) -> str | None:
    """Why no run writes to `directory` now, from its lease alone, or None when one seems to.
    It never takes the lock (`current_writer` does, for a moment): a reader polling every second
    (`draftgen top`) must not make a starting run find the lock held. A run that ended releases
    its lease; one killed leaves it naming a process gone (this host) or a heartbeat gone stale."""
    lease = Lease.read(Path(directory) / LEASE_FILE)
    if lease is None:
        return "no run holds it (the last one ended)"
    if lease.host == socket.gethostname() and not _pid_alive(lease.pid):
        return f"{lease.owner()}, the run that held it, no longer runs (killed?)"
    age = time.time() - lease.heartbeat_at
    if age >= stale_seconds:
        return f"the lease of {lease.owner()} has had no heartbeat for {age:,.0f} s"
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """Hold `directory` for one writer; a context manager. `on_lost` is called (from the
    heartbeat thread) if another process took the lease over meanwhile."""

    def __init__(
        self,
        directory: Path,
        *,
        heartbeat_seconds: float = 10.0,
        stale_seconds: float = 60.0,
        on_lost: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.directory = directory
        self.heartbeat_seconds = heartbeat_seconds
        self.stale_seconds = stale_seconds
        self.on_lost = on_lost
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.nonce = uuid.uuid4().hex
        self._fd = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lease_path(self) -> Path:
        return self.directory / LEASE_FILE

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = Lease.read(self.lease_path)
            owner = holder.owner() if holder else "another process"
            raise OutputLocked(self._refusal(owner)) from None
        except OSError as err:  # a file system without flock: the lease alone decides
            log.warning("%s: flock unavailable (%s); relying on the lease", self.directory, err)
        self._fd = fd
        try:
            self._take_lease()
        except BaseException:
            self._unlock()
            raise
        self._thread = threading.Thread(target=self._heartbeat, name="lease", daemon=True)
        self._thread.start()

    def _refusal(self, owner: str) -> str:
        return (
            f"{self.directory} is being written by {owner}: two writers would duplicate every "
            "record. Wait for that run to end (or stop it), or give this run another --output"
        )

    def _take_lease(self) -> None:
        held = Lease.read(self.lease_path)
        if held is not None and held.nonce != self.nonce:
            age = time.time() - held.heartbeat_at
            dead = held.host == self.host and not _pid_alive(held.pid)
            if not dead and age < self.stale_seconds:
                # We hold the flock, so the owner is on another host (or crashed there): a live
                # owner renews its heartbeat; one that crashed does not, and the lease goes stale.
                self._wait_for_renewal(held, self.stale_seconds - age)
                age = time.time() - held.heartbeat_at
            log.warning(
                "%s: taking over the lease of %s (%s); it was left by a run that ended "
                "without releasing it",
                self.directory,
                held.owner(),
                "no longer running" if dead else f"no heartbeat for {age:.0f} s",
            )
        self._write_lease()

    def _wait_for_renewal(self, held: Lease, wait: float) -> None:
        """Refuse if `held` is renewed (or replaced) within `wait` seconds."""
        log.info(
            "%s: %s holds the lease; waiting up to %.0f s for its heartbeat",
            self.directory,
            held.owner(),
            wait,
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            now = Lease.read(self.lease_path)
            if now is not None and now != held:
                raise OutputLocked(self._refusal(now.owner()))

    def _write_lease(self) -> None:
        data: dict[str, Any] = {
            "pid": self.pid,
            "host": self.host,
            "nonce": self.nonce,
            "heartbeat_at": time.time(),
        }
        tmp = self.directory / f".{LEASE_FILE}.{self.nonce}.tmp"
        tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
        os.replace(tmp, self.lease_path)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            held = Lease.read(self.lease_path)
            if held is not None and held.nonce != self.nonce:
                err = OutputLocked(
                    f"{self.directory}: {held.owner()} took over this run's lease (no heartbeat "
                    f"seen for {self.stale_seconds:.0f} s?); stopping so that only one writes"
                )
                log.error("%s", err)
                if self.on_lost is not None:
                    self.on_lost(err)
                return
            try:
                self._write_lease()
            except OSError as err:
                log.warning("%s: cannot renew the lease: %s", self.directory, err)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        held = Lease.read(self.lease_path)
        if held is not None and held.nonce == self.nonce:
            with contextlib.suppress(OSError):
                self.lease_path.unlink()
        self._unlock()

    def _unlock(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
