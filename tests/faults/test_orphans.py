"""A SIGKILLed generator leaves no process behind: its tokenizer workers (a process pool) notice
the parent is gone and exit, instead of waiting on their queue forever with a tokenizer loaded."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .gen_run import generate_args, write_prompt_job
from .misbehaving import Misbehaving


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_tokenizer_workers_exit_when_the_generator_is_killed(tmp_path, kimi_like_tokenizer):
    job = write_prompt_job(
        tmp_path,
        kimi_like_tokenizer,
        4,
        generator={"tokenizerWorkers": 2},
        model_extra={"specialTokens": ["<think>"]},
    )
    with Misbehaving("stall") as server:  # requests hang: the generator stays up, workers idle
        with open(tmp_path / "log", "w") as log:
            proc = subprocess.Popen(
                generate_args(job, server.url, tmp_path / "out"),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 120
            while not server.generate_calls:  # the pool rendered the prompts
                assert proc.poll() is None, (tmp_path / "log").read_text()[-3000:]
                assert time.monotonic() < deadline, "no request came"
                time.sleep(0.1)
            workers = [
                c
                for c in _children(proc.pid)
                if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()
            ]
            assert workers, "no tokenizer worker process found"
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            deadline = time.monotonic() + 60  # bounds a failure only
            while any(_alive(w) for w in workers) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = [w for w in workers if _alive(w)]
            assert not left, f"tokenizer workers outlived the killed generator: {left}"
        finally:
            for pid in [proc.pid] + _children(proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
