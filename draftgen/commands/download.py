"""`draftgen download`: the model download Job's command (and anyone's) — `hf://` weights into a
directory on the models volume, at one revision, resumably.

`huggingface_hub.snapshot_download(local_dir=...)` does the work: files already complete (their
metadata under `<dir>/.cache/huggingface/` matches the revision) are skipped, so a pod re-run
after a kill or an eviction fetches only the files that are missing. The unit of resume is the
file: huggingface_hub 2.x writes each download to a part file unique to its process and never
continues another process's part, so a file cut off by a kill is fetched again from its start,
and the part it leaves behind is garbage this command removes before it starts (the Job runs
one pod at a time, so no live download owns one). Before it starts, a dry run lists the revision's files and sizes: the total
and the bytes on disk are served as two gauges (`contract.download_cli`) the operator scrapes into
`status.model`; at the end the resolved commit is written to `--report` as `{"commit": ...}`.

Exit codes (`ExitCode`): 0 done; 2 the repository, revision or token is refused (a retry cannot
help: the Job fails at once); 5 the volume is full; 7 the hub could not be reached or broke off
(the Job's next pod resumes).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from draftgen.contract import download_cli
from draftgen.contract.download_cli import add_arguments
from draftgen.contract.generator_cli import ExitCode

__all__ = ["add_arguments", "bytes_on_disk", "remove_stale_parts", "run"]


def bytes_on_disk(directory: Path) -> int:
    """Bytes of the weights under `directory`, the parts of files being fetched included."""
    total = 0
    for path in directory.rglob("*"):
        if path.is_file() and (path.suffix == ".incomplete" or ".cache" not in path.parts):
            total += path.stat().st_size
    return total


def remove_stale_parts(directory: Path) -> int:
    """Delete part files a killed download left (no other process continues them); their bytes."""
    freed = 0
    for part in (directory / ".cache" / "huggingface" / "download").rglob("*.incomplete"):
        freed += part.stat().st_size
        part.unlink(missing_ok=True)
    return freed


def _serve_progress(port: int, directory: Path, total: int) -> threading.Event:
    """Serve bytes done/total on `port`, refreshed every second until the event is set."""
    from prometheus_client import CollectorRegistry, Gauge, start_http_server

    registry = CollectorRegistry()
    done = Gauge(download_cli.BYTES_DONE.name, download_cli.BYTES_DONE.help, registry=registry)
    Gauge(download_cli.BYTES_TOTAL.name, download_cli.BYTES_TOTAL.help, registry=registry).set(
        total
    )
    done.set(bytes_on_disk(directory))
    start_http_server(port, registry=registry)
    stop = threading.Event()

    def refresh() -> None:
        while not stop.wait(1.0):
            done.set(bytes_on_disk(directory))

    threading.Thread(target=refresh, name="download-progress", daemon=True).start()
    return stop


def _refused(err: Exception) -> bool:
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    seen: BaseException | None = err
    while seen is not None:  # the dry run wraps the hub's answer in a DryRunError
        if isinstance(seen, RepositoryNotFoundError | RevisionNotFoundError | GatedRepoError):
            return True
        status = getattr(getattr(seen, "response", None), "status_code", None)
        if isinstance(seen, HfHubHTTPError) and status in (401, 403, 404):
            return True
        seen = seen.__cause__
    return False


def run(args: argparse.Namespace) -> int:
    from huggingface_hub import snapshot_download

    repo, revision, to = args.repo, args.revision, Path(args.to)
    where = f"{repo}@{revision or 'main'}"
    token: Any = os.environ.get("HF_TOKEN") or None
    to.mkdir(parents=True, exist_ok=True)
    freed = remove_stale_parts(to)
    if freed:
        print(f"{where}: removed {freed} bytes of parts a killed download left", flush=True)
    try:
        files: Any = snapshot_download(
            repo, revision=revision, local_dir=to, token=token, dry_run=True
        )
        total = sum(f.file_size or 0 for f in files)
        missing = [f for f in files if f.will_download]
        commit = files[0].commit_hash if files else None
        print(
            f"{where}: commit {commit}, {len(files)} files, {total} bytes; "
            f"{len(files) - len(missing)} already complete, fetching {len(missing)}",
            flush=True,
        )
        stop = _serve_progress(args.metrics_port, to, total) if args.metrics_port else None
        snapshot_download(repo, revision=commit or revision, local_dir=to, token=token)
        if stop is not None:
            stop.set()
    except Exception as err:  # every hub error: refused (fatal) or unreachable (retried)
        if isinstance(err, OSError) and err.errno == errno.ENOSPC:
            print(
                f"{where}: the models volume is full ({to}); give model.volume a larger claim "
                "(Kimi-K2.5 needs about 600 GB) and run again: complete files are kept",
                file=sys.stderr,
            )
            return ExitCode.DISK_FULL
        if _refused(err):
            print(
                f"{where}: repository, revision or token refused ({type(err).__name__}: "
                f"{str(err).splitlines()[0] if str(err) else ''}); check model.weights, "
                "model.revision and model.hfTokenSecret",
                file=sys.stderr,
            )
            return ExitCode.INVALID
        print(
            f"{where}: the hub could not be reached or broke off ({type(err).__name__}: {err}); "
            "run again: complete files are kept and only what is missing is fetched",
            file=sys.stderr,
        )
        return ExitCode.HUB_UNREACHABLE
    print(f"{where}: {bytes_on_disk(to)} bytes in {to}, commit {commit}", flush=True)
    if args.report is not None:
        Path(args.report).write_text(json.dumps({"commit": commit, "bytes": total}))
    return ExitCode.OK
