"""Class 1 of issue 21: one writer per output directory. Two real `draftgen generate` processes
on one output against the real server: the second is refused naming the first's pid and host,
nothing is written twice. The lock itself: a crash leaves nothing that blocks the next run, a
lease with a live heartbeat (a writer on another host of a shared volume, where flock does not
reach) refuses, a stale one is taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from draftgen.contract.generator_cli import ExitCode
from draftgen.output.lock import LEASE_FILE, OutputLock, OutputLocked
from tests.gate import Gate

from .gen_run import (
    Run,
    check_consistent,
    expected_ids,
    generate_args,
    prompt_rows,
    record_count,
    records,
    write_job,
    write_jsonl,
)


def _lease(directory: Path, **fields) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = {"pid": 1, "host": "elsewhere", "nonce": "x", "heartbeat_at": time.time(), **fields}
    (directory / LEASE_FILE).write_text(json.dumps(data))


def test_a_second_lock_on_the_same_directory_is_refused_naming_the_owner(tmp_path):
    with OutputLock(tmp_path), pytest.raises(OutputLocked) as err:
        OutputLock(tmp_path).acquire()
    assert f"pid {os.getpid()} on host {socket.gethostname()}" in str(err.value)
    assert err.value.exit_code == ExitCode.OUTPUT_LOCKED
    with OutputLock(tmp_path):  # released: the next run takes it
        pass
    assert not (tmp_path / LEASE_FILE).exists()


def test_a_live_lease_from_another_host_refuses_even_without_flock(tmp_path):
    # On a shared volume flock may not reach the other host: only the lease is seen, and its
    # heartbeat goes on (the other writer is alive).
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(0.2):
            _lease(tmp_path, pid=4242, host="node-b")

    _lease(tmp_path, pid=4242, host="node-b")
    beat = threading.Thread(target=heartbeat)
    beat.start()
    try:
        with pytest.raises(OutputLocked, match="pid 4242 on host node-b"):
            OutputLock(tmp_path, stale_seconds=3).acquire()
    finally:
        stop.set()
        beat.join()


def test_a_fresh_lease_that_is_not_renewed_is_taken_over(tmp_path, caplog):
    # A writer on another node crashed moments ago: its lease is fresh but never renewed.
    _lease(tmp_path, pid=4242, host="node-b")
    started = time.monotonic()
    with OutputLock(tmp_path, stale_seconds=1.5):
        assert json.loads((tmp_path / LEASE_FILE).read_text())["pid"] == os.getpid()
    assert 1.0 < time.monotonic() - started < 10
    assert "taking over the lease of pid 4242 on host node-b" in caplog.text


def test_a_stale_lease_is_taken_over(tmp_path, caplog):
    _lease(tmp_path, pid=4242, host="node-b", heartbeat_at=time.time() - 3600)
    with OutputLock(tmp_path, stale_seconds=60):
        lease = json.loads((tmp_path / LEASE_FILE).read_text())
        assert lease["pid"] == os.getpid()
    assert "taking over the lease of pid 4242 on host node-b" in caplog.text


def test_a_crashed_writer_leaves_nothing_that_blocks_the_next(tmp_path):
    # A real process takes the lock and is SIGKILLed: flock goes with it, the lease names a dead
    # pid on this host, and the next run recovers at once (no waiting for the heartbeat to age).
    code = (
        "import sys, time; from pathlib import Path; from draftgen.output.lock import OutputLock\n"
        "OutputLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(OutputLocked, match=f"pid {proc.pid} "):
            OutputLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait()
    with OutputLock(tmp_path):
        assert json.loads((tmp_path / LEASE_FILE).read_text())["pid"] == os.getpid()


def test_a_lost_lease_stops_the_holder(tmp_path):
    lost: list[BaseException] = []
    with OutputLock(tmp_path, heartbeat_seconds=0.05, on_lost=lost.append):
        _lease(tmp_path, pid=4242, host="node-b")  # another host took it over
        deadline = time.monotonic() + 5
        while not lost and time.monotonic() < deadline:
            time.sleep(0.02)
    assert lost and "pid 4242 on host node-b took over" in str(lost[0])


@pytest.mark.sglang
@pytest.mark.long
def test_two_generate_processes_on_one_output_one_is_refused_nothing_twice(
    tmp_path, tiny_kimi, sglang_server
):
    write_jsonl(tmp_path / "p.jsonl", prompt_rows(150))
    job = write_job(
        tmp_path, tiny_kimi, [{"name": "chat", "source": "p.jsonl", "format": "prompt"}]
    )
    out = tmp_path / "out"
    # The first run goes through a gate that lets a few requests through and holds the rest: it
    # has taken the output and written, and stays busy until the second run has been refused.
    with Gate(sglang_server.url, let_through=2) as gate:
        first = Run(generate_args(job, gate.url, out), tmp_path)
        deadline = time.monotonic() + 120
        while record_count(out) < 1:  # the first run is writing
            assert first.poll() is None, first.log()
            assert time.monotonic() < deadline, "the first run never took the output"
            time.sleep(0.05)
        gate.wait_held()
        second = Run(generate_args(job, sglang_server.url, out), tmp_path)
        code, log = second.finish(timeout=120)
        overlapped = first.poll() is None
        gate.open()
        code2, log2 = first.finish()
    assert code2 == 0, log2
    ids = [r["id"] for r in records(out / "chat")]
    assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} records written twice"
    assert overlapped, "the first run ended before the second did: no test of two writers"
    assert code == ExitCode.OUTPUT_LOCKED, log
    assert f"pid {first.proc.pid} on host {socket.gethostname()}" in log
    assert "Traceback" not in log
    recs = check_consistent(out, ["chat"])["chat"]
    assert sorted(r["id"] for r in recs) == sorted(expected_ids(job, "chat"))
