"""The generator SIGKILLed while its tokenizer workers are still starting (spawned, not yet
through their initializer): no worker outlives it. A worker that read `os.getppid()` only after
the parent was gone watched pid 1 (or a subreaper) and lived on forever; now the parent's pid is
handed in, PR_SET_PDEATHSIG kills a worker with its parent, and a worker that starts after the
parent died exits at once. A second run on the same output then resumes normally."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .gen_run import write_prompt_job
from .misbehaving import Misbehaving
from .test_orphans import _alive, _children

WORKERS = 6


def _spawned_workers(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        try:
            if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text():
                found.append(child)
        except FileNotFoundError:
            continue
    return found


def _generate(job: Path, server: str, out: Path, log: Path) -> subprocess.Popen:
    with open(log, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "draftgen.cli", "generate", "--job", str(job), "--server",
             server, "--output", str(out), "--progress", "log"],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


@pytest.mark.long
def test_workers_killed_while_starting_do_not_survive(tmp_path, kimi_like_tokenizer):
    job = write_prompt_job(
        tmp_path,
        kimi_like_tokenizer,
        40,
        generator={"tokenizerWorkers": WORKERS},
        model_extra={"specialTokens": ["<think>"]},
    )
    seen: set[int] = set()
    with Misbehaving("stall") as server:
        proc = _generate(job, server.url, tmp_path / "out", tmp_path / "log")
        try:
            deadline = time.monotonic() + 120
            while not seen:  # kill the moment the first workers exist (still importing)
                assert proc.poll() is None, (tmp_path / "log").read_text()[-3000:]
                assert time.monotonic() < deadline, "no tokenizer worker appeared"
                seen.update(_spawned_workers(proc.pid))
                time.sleep(0.005)
            seen.update(_spawned_workers(proc.pid))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            deadline = time.monotonic() + 30
            while any(_alive(w) for w in seen) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = [w for w in seen if _alive(w)]
            assert not left, f"tokenizer workers outlived the killed generator: {left}"
        finally:
            for pid in [proc.pid, *seen]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

        # The same output again: it starts, renders and asks the server (no survivor in its way).
        calls = len(server.generate_calls)
        again = _generate(job, server.url, tmp_path / "out", tmp_path / "log2")
        try:
            deadline = time.monotonic() + 120
            while len(server.generate_calls) == calls:
                assert again.poll() is None, (tmp_path / "log2").read_text()[-3000:]
                assert time.monotonic() < deadline, "the resumed run sent no request"
                time.sleep(0.1)
        finally:
            workers = _spawned_workers(again.pid)
            again.send_signal(signal.SIGKILL)
            again.wait()
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
