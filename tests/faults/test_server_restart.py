"""The SGLang server SIGKILLed mid-job (the whole process group, as an OOM kill or a node
problem would) and started again on the same port: the generator waits for it, retries the same
requests, writes no cut-off generation as a sample, and finishes with exactly the job's ids.

Greedy decoding makes "no partial output" checkable: every record equals what the restarted
server generates for the same prompt, token for token."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.gate import Gate

from .gen_run import (
    Run,
    check_consistent,
    expected_ids,
    generate_args,
    record_count,
    write_prompt_job,
)

pytestmark = [pytest.mark.sglang, pytest.mark.long]

MAX_NEW = 24


@pytest.mark.timeout(1200)  # a server restart on a shared CPU
def test_server_killed_mid_job_and_restarted_on_the_same_port(tmp_path, tiny_kimi, sglang_server):
    if not (hasattr(sglang_server, "kill") and hasattr(sglang_server, "restart")):
        pytest.skip("needs a server this test may kill (not DRAFTGEN_TEST_SGLANG_URL)")
    job = write_prompt_job(
        tmp_path,
        tiny_kimi,
        32,
        prefix="s",
        sampling={"temperature": 0.0, "maxNewTokens": MAX_NEW},
        # Four at a time: records land a few at a time, requests are always in flight.
        generator={
            "retries": 3,
            "tokenizerWorkers": 1,
            "concurrency": {"mode": "fixed", "maxRequests": 4},
        },
    )
    out = tmp_path / "out"
    url = sglang_server.url
    # Through a gate that holds the requests after the first four: the job is mid-way when the
    # server dies, however fast it would otherwise run; the held ones meet the dead server.
    with Gate(url, let_through=4) as gate:
        run = Run(generate_args(job, gate.url, out), tmp_path)
        try:
            deadline = time.monotonic() + 300
            while record_count(out) < 1:  # mid-job: some written, more in flight
                assert run.poll() is None, run.log()[-3000:]
                assert time.monotonic() < deadline, "no records came"
                time.sleep(0.05)
            gate.wait_held()
            sglang_server.kill()
            killed_at = record_count(out)
            assert killed_at < 32, "the job ended before the server could be killed"
            gate.open()
            sglang_server.restart()  # same port; waits until it generates again
            assert sglang_server.url == url
            code, log = run.finish(timeout=600)
        finally:
            if run.poll() is None:
                run.proc.kill()
    assert code == 0, log[-3000:]

    recs = check_consistent(out, ["p"])["p"]
    assert {r["id"] for r in recs} == set(expected_ids(job, "p"))  # nothing lost
    assert not (out / "p" / "rejects.jsonl").exists()  # nothing rejected for the crash
    assert "healthy again" in log, log[-3000:]  # the generator said it waited and saw it back
    assert killed_at < len(recs)
    # The generator saw the crash, waited for the server and retried: some requests took more
    # than one attempt, and each such record is a whole generation of the restarted server.
    assert "attempt 1/4" in log, log[-3000:]
    retried = [r for r in recs if r["meta"]["attempts"] > 1]
    assert retried, "no request was in flight when the server died"
    with httpx.Client(base_url=url, timeout=300) as http:
        for rec in recs:
            direct = http.post(
                "/generate",
                json={
                    "input_ids": rec["input_ids"],
                    "sampling_params": {
                        "temperature": 0.0,
                        "max_new_tokens": MAX_NEW,
                        "skip_special_tokens": False,
                        "no_stop_trim": True,
                    },
                },
            ).json()
            assert rec["output_ids"] == direct["output_ids"], rec["id"]
            assert rec["finish_reason"] == direct["meta_info"]["finish_reason"]["type"]
