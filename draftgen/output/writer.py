"""Writing records: JSONL shards appended one whole line at a time, fsync'd in batches, and
manifests replaced atomically. A record is counted only after its line is fully in the file;
a full disk stops the run with `DiskFull` and leaves no half line behind."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

from draftgen.contract import layout
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError
from draftgen.output.manifest import DatasetManifest
from draftgen.output.record import Record, Reject

__all__ = ["AppendFile", "DatasetWriter", "DiskFull", "atomic_write_json", "encode_line"]

_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


class DiskFull(DraftgenError, OSError):
    """The output volume is full (or a file reached its size limit): the run stops."""

    exit_code = ExitCode.DISK_FULL
    fix = "free space on the output volume and run the same command again: it resumes"

    def report(self) -> list[str]:
        return [f"disk full: {self}"]


def encode_line(record: dict[str, Any]) -> bytes:
    """One JSONL line. Token ids stay plain integers of any size."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _disk_error(err: OSError, path: Path) -> OSError:
    if err.errno in _DISK_FULL:
        return DiskFull(
            err.errno,
            f"{path}: {os.strerror(err.errno)}; free space on the output "
            "volume (or enlarge it) and run the same command again to resume",
        )
    return err


def atomic_write_json(path: Path, data: Any) -> None:
    """Replace `path` with `data` as JSON: write a temporary file, fsync, rename over."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise _disk_error(err, path) from err


class AppendFile:
    """A file that takes whole lines: a line is either entirely appended or not at all."""

    def __init__(self, path: Path, *, fsync_every: int = 64, fsync_seconds: float = 2.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size
        self._unsynced = 0
        self._last_sync = time.monotonic()
        self.fsync_every = fsync_every
        self.fsync_seconds = fsync_seconds

    def append(self, line: bytes) -> None:
        start = self._size
        try:
            view = memoryview(line)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as err:
            # Leave no half line: cut the file back to where this line began.
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            raise _disk_error(err, self.path) from err
        self._size = start + len(line)
        self._unsynced += 1
        if (
            self._unsynced >= self.fsync_every
            or time.monotonic() - self._last_sync >= self.fsync_seconds
        ):
            self.sync()

    def sync(self) -> None:
        if self._unsynced:
            try:
                os.fsync(self._fd)
            except OSError as err:
                raise _disk_error(err, self.path) from err
            self._unsynced = 0
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = -1


class DatasetWriter:
    """Shards and rejects of one dataset, under `DIR/<dataset>/`."""

    def __init__(
        self,
        directory: Path,
        *,
        shard_max_records: int,
        next_shard: int = 0,
        records_in_shard: int = 0,
        fsync_every: int = 64,
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.shard_max_records = shard_max_records
        self.fsync_every = fsync_every
        self._shard_index = next_shard
        self._records_in_shard = records_in_shard
        self._shard: AppendFile | None = None
        self._rejects: AppendFile | None = None

    def _current_shard(self) -> AppendFile:
        if self._shard is not None and self._records_in_shard >= self.shard_max_records:
            self._shard.close()
            self._shard = None
            self._shard_index += 1
            self._records_in_shard = 0
        if self._shard is None:
            path = layout.shard_file(self.directory, self._shard_index)
            self._shard = AppendFile(path, fsync_every=self.fsync_every)
        return self._shard

    def write_record(self, record: Record) -> None:
        """Append one record; returns only once the whole line is in the file."""
        self._current_shard().append(encode_line(record.to_json()))
        self._records_in_shard += 1

    def write_reject(self, reject: Reject) -> None:
        if self._rejects is None:
            self._rejects = AppendFile(
                layout.rejects_file(self.directory), fsync_every=self.fsync_every
            )
        self._rejects.append(encode_line(reject.to_json()))

    def write_manifest(self, manifest: DatasetManifest) -> None:
        atomic_write_json(layout.dataset_manifest(self.directory), manifest.to_json())

    def sync(self) -> None:
        for f in (self._shard, self._rejects):
            if f is not None:
                f.sync()

    def close(self) -> None:
        for f in (self._shard, self._rejects):
            if f is not None:
                f.close()
        self._shard = self._rejects = None
