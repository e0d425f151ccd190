"""Many servers, one job (`spec.server.replicas` > 1): the generator's least-loaded routing over
two real CPU SGLang servers. Both serve, one is killed and started again in the middle of the
run, and the run still ends with every sample exactly once and the token budget met within 1 %.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter

import pytest

from draftgen.redact import redact_url
from draftgen.testing.sglang import SGLangServer

from .gen_helpers import (
    cli,
    expected_ids,
    generate_command,
    records,
    write_prompt_datasets,
)

pytestmark = [pytest.mark.sglang, pytest.mark.long]

MAX_NEW = 2
BUDGET = 200  # completion tokens: one sample (2 tokens) is 1 % of it


@pytest.fixture(scope="module")
def second_server(tiny_kimi, sglang_server):
    """A second server of the same model, owned by this module (it is the one killed)."""
    if not hasattr(sglang_server, "restart"):
        pytest.skip("needs servers this session starts (not DRAFTGEN_TEST_SGLANG_URL)")
    from tests.conftest import SGLANG_TEST_MAX_TOTAL_TOKENS

    with SGLangServer(tiny_kimi, max_total_tokens=SGLANG_TEST_MAX_TOTAL_TOKENS) as server:
        yield server


@pytest.mark.timeout(1200)  # two server starts (one a restart) on a shared CPU
def test_two_servers_both_serve_and_one_restarts_without_loss(
    tmp_path, tiny_kimi, sglang_server, second_server
) -> None:
    job = write_prompt_datasets(
        tmp_path,
        tiny_kimi,
        {"all": (12, None), "capped": (300, {"completionTokens": BUDGET})},
        sampling={"maxNewTokens": MAX_NEW, "temperature": 1.0, "seed": 7},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 4}, "retries": 3},
    )
    out = tmp_path / "out"
    urls = [sglang_server.url, second_server.url]
    proc = cli(*generate_command(job, out, *urls))
    try:
        deadline = time.monotonic() + 900
        # Both servers answer: the least-loaded choice spreads the work over them.
        while {r["meta"]["server"] for d in ("all", "capped") for r in records(out / d)} != {
            redact_url(u) for u in urls
        }:
            assert proc.poll() is None and time.monotonic() < deadline, "both never served"
            time.sleep(0.05)
        # The generator is paused while the second server crashes (with requests in flight on
        # it) and comes back, so the run is still going when it is back, however long a start
        # takes on this machine; on resuming, the generator finds those requests failed.
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            second_server.kill()
            second_server.restart()  # returns once it is healthy
            back_at = time.time()
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        log, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log

    everything = records(out / "all") + records(out / "capped")
    # Every sample exactly once: nothing lost with the killed server, nothing sent twice.
    ids = [r["id"] for r in everything]
    assert Counter(ids).most_common(1)[0][1] == 1
    assert {r["id"] for r in records(out / "all")} == set(expected_ids(job, "all"))
    assert not (out / "all" / "rejects.jsonl").exists()
    # The budget holds across both servers and the restart.
    capped = sum(r["completion_tokens"] for r in records(out / "capped"))
    assert abs(capped - BUDGET) <= BUDGET * 0.01, capped
    manifest = json.loads((out / "capped" / "manifest.json").read_text())
    assert manifest["done"] and manifest["samples"] == len(records(out / "capped"))
    # Both served; the restarted one served again once it was back (it rejoined the routing).
    assert {r["meta"]["server"] for r in everything} == {redact_url(u) for u in urls}
    again = [
        r
        for r in everything
        if r["meta"]["server"] == redact_url(second_server.url)
        and r["meta"]["created_at"] > back_at
    ]
    assert again, "the restarted server got no work after it was back"
