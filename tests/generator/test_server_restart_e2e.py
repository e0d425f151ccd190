"""Surviving the server: SGLang is killed in the middle of a run and started again; the generator
waits for its health, retries the same requests, and ends with every sample exactly once."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.gate import Gate

from .gen_helpers import (
    cli,
    expected_ids,
    generate_command,
    records,
    write_prompt_job,
)

pytestmark = pytest.mark.sglang


@pytest.mark.timeout(1200)  # a server restart on a shared CPU
def test_server_killed_and_restarted_mid_run(tmp_path, tiny_kimi, sglang_server):
    if not hasattr(sglang_server, "restart"):
        pytest.skip("needs a server this session started (not DRAFTGEN_TEST_SGLANG_URL)")
    job = write_prompt_job(
        tmp_path,
        tiny_kimi,
        24,
        sampling={"maxNewTokens": 6},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 4}, "retries": 3},
    )
    out = tmp_path / "out"
    # Requests after the first four wait at a gate: the run is mid-way when the server dies.
    with Gate(sglang_server.url, let_through=4) as gate:
        proc = cli(*generate_command(job, out, gate.url))
        try:
            deadline = time.monotonic() + 300  # bounds a failure only
            while not any(p.stat().st_size for p in out.glob("p/shard-*.jsonl")):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            gate.wait_held()
            sglang_server.kill()  # a crash with requests in flight
            gate.open()
            sglang_server.restart()
            log, _ = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, log
    ids = [r["id"] for r in records(out / "p")]
    assert Counter(ids).most_common(1)[0][1] == 1
    assert set(ids) == set(expected_ids(job, "p"))  # nothing lost, nothing rejected
    assert not (out / "p" / "rejects.jsonl").exists()
    assert "healthy again" in log
    assert max(r["meta"]["attempts"] for r in records(out / "p")) >= 2
