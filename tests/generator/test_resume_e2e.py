"""Exact resume: `draftgen generate` killed with SIGKILL at several points, a torn last line
left behind, then run again — the output holds each id of an uninterrupted run exactly once,
and tokens from earlier runs count against the budget."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from .gen_helpers import (
    CLI,
    cli,
    expected_ids,
    generate_command,
    records,
    write_prompt_datasets,
    write_prompt_job,
)

pytestmark = pytest.mark.sglang


def _lines(directory: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in directory.glob("shard-*.jsonl"))


def _run_until(
    args: list[str], out: Path, kill_at: int | None, sig: int = signal.SIGKILL, timeout: float = 180
) -> int | None:
    """Run the CLI; send `sig` once `out/all` holds `kill_at` records. The return code."""
    proc = cli(*args)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if kill_at is not None and _lines(out / "all") >= kill_at:
                proc.send_signal(sig)
                proc.wait(timeout=60)
                return proc.returncode
            time.sleep(0.02)
        log = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
        assert proc.returncode == 0, log
        return proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.long
def test_sigkill_at_several_points_then_resume_exactly(tmp_path, tiny_kimi, sglang_server):
    budget, max_new = 60, 6
    job = write_prompt_datasets(
        tmp_path,
        tiny_kimi,
        {"all": (32, None), "capped": (40, {"completionTokens": budget})},
        sampling={"temperature": 1.0, "maxNewTokens": max_new, "seed": 11},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 6}, "tokenizerWorkers": 1},
    )
    out = tmp_path / "out"
    args = generate_command(job, out, sglang_server.url)

    codes = [
        _run_until(args, out, 1),
        _run_until(args, out, 10, signal.SIGTERM),
        _run_until(args, out, 20),
    ]
    assert -signal.SIGKILL in codes  # at least one run was cut off mid-way
    assert codes[1] in (0, 143)  # SIGTERM: in-flight requests aborted, a clean exit
    # A write cut short: half a record at the end of the last shard.
    last = sorted((out / "all").glob("shard-*.jsonl"))[-1]
    whole = last.read_bytes()
    with open(last, "ab") as f:
        f.write(b'{"id": "all/torn/0", "dataset": "all", "output_ids": [163606, 1')
    started = time.monotonic()
    _run_until(args, out, None)
    resume_seconds = time.monotonic() - started

    ids = [r["id"] for r in records(out / "all")]
    assert Counter(ids).most_common(1)[0][1] == 1  # each id once
    assert set(ids) == set(expected_ids(job, "all"))  # exactly what an uninterrupted run holds
    assert last.read_bytes().startswith(whole) and b"all/torn/0" not in last.read_bytes()

    capped = records(out / "capped")
    total = sum(r["completion_tokens"] for r in capped)
    assert len({r["id"] for r in capped}) == len(capped)
    assert budget - max_new < total < budget + max_new  # earlier runs' tokens counted
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["done"] and manifest["datasets"]["all"]["samples"] == len(ids)
    print(f"resume to completion: {resume_seconds:.1f} s")


def test_a_full_disk_stops_with_its_own_exit_code_and_no_half_record(
    tmp_path, tiny_kimi, sglang_server
):
    """A file-size limit makes every write past it fail with EFBIG, as a full volume would."""
    import resource
    import subprocess

    job = write_prompt_job(
        tmp_path, tiny_kimi, 16, name="all", prefix="a", sampling={"maxNewTokens": 4}
    )
    out = tmp_path / "out"
    args = [*CLI, *generate_command(job, out, sglang_server.url)]

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    done = subprocess.run(args, preexec_fn=limit, capture_output=True, text=True, timeout=180)
    assert done.returncode == 5, done.stderr
    assert "free space" in done.stderr
    shard = out / "all" / "shard-00000.jsonl"
    data = shard.read_bytes()
    assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines())
    written = len(data.splitlines())
    # With room again, the same command finishes the job exactly.
    done = subprocess.run(args, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    ids = [r["id"] for r in records(out / "all")]
    assert len(ids) == len(set(ids)) == len(expected_ids(job, "all")) > written
