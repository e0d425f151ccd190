"""A generator Job out of retries, or a server that keeps crashing: the GenerationJob goes to
Failed with a reason and a message that tell a person what to change — for each way it happens,
through the operator's real reconcile against the emulator (tests/operator covers two of them
through kopf)."""

from __future__ import annotations

import pytest

from draftgen.controller.kube import Kube
from draftgen.controller.settings import OperatorSettings
from tests.operator.harness import Cluster

from .flaky_cluster import FlakyEmulatorThread
from .test_operator_faults import _job
from .test_reconcile_steps import Reconciler, one_step

SERVER_CRASHES = {
    # last terminated state → (reason, words the message must carry)
    "host-oom": (
        {"reason": "OOMKilled", "exitCode": 137},
        "ServerOutOfHostMemory",
        ["sizeGBPerRank", "per tensor-parallel rank"],
    ),
    "gpu-oom": (
        {
            "reason": "Error",
            "exitCode": 1,
            "message": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        },
        "ServerOutOfGPUMemory",
        ["memFractionStatic", "CUDA out of memory"],
    ),
    "crash": (
        {
            "reason": "Error",
            "exitCode": 1,
            "message": "ValueError: Unrecognized configuration class KimiK25Config",
        },
        "ServerCrashLoop",
        ["kubectl logs --previous", "Unrecognized configuration class"],
    ),
}

GENERATOR_EXITS = {
    # the generator's last words (FallbackToLogsOnError) → words the message must carry
    2: (
        "spec.datasets[0].source: data/x.jsonl: no such file or directory; check the dataset's source",
        ["exited with code 2", "no such file", "edit the spec to resume"],
    ),
    3: (
        "refusing to start: model.specialTokens: '<think>' encodes to 3 ids",
        ["exited with code 3", "specialTokens", "output so far is kept"],
    ),
    4: (
        "http://kimi-server-0.kimi-server.drafters.svc:30000 did not become healthy "
        "(GET /health_generate) within 1800 s",
        ["exited with code 4", "did not become healthy"],
    ),
    5: (
        "disk full: /output/kimi/b-chat/shard-00003.jsonl: No space left on device; free space on "
        "the output volume (or enlarge it) and run the same command again to resume",
        ["exited with code 5", "No space left on device", "free space on the output volume"],
    ),
}


@pytest.fixture
def cluster(tmp_path):
    emu = FlakyEmulatorThread(tmp_path, fail_rate=0.0, seed=0).start()
    try:
        yield Cluster(emu, "drafters")
    finally:
        emu.stop()


def _step(cluster: Cluster, times: int = 1) -> dict:
    for _ in range(times):
        rec = Reconciler(
            Kube(cluster.emu.url, backoff=0.01),
            OperatorSettings(http_timeout_seconds=0.2, preflight=False),
        )
        try:
            one_step(rec, "drafters", "kimi")
        finally:
            rec.kube.close()
    return cluster.status("kimi")


def _failed(status: dict) -> dict:
    assert status["phase"] == "Failed", status
    cond = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert cond["status"] == "True" and cond["message"] == status["message"]
    return cond


@pytest.mark.parametrize("kind", list(SERVER_CRASHES))
def test_a_crash_looping_server_fails_the_job_with_what_to_change(cluster, kind):
    last, reason, words = SERVER_CRASHES[kind]
    cluster.apply(_job())
    _step(cluster)
    cluster.put_crashed_server(last)
    cond = _failed(_step(cluster))
    assert cond["reason"] == reason
    for w in words:
        assert w in cond["message"], cond["message"]
    assert cluster.deployment("kimi-server-0")["spec"]["replicas"] == 0  # GPUs given back
    assert _step(cluster, 2)["phase"] == "Failed"  # and it stays failed


@pytest.mark.parametrize("code", list(GENERATOR_EXITS))
def test_a_generator_past_its_backoff_limit_fails_the_job_with_its_last_words(cluster, code):
    last_words, words = GENERATOR_EXITS[code]
    cluster.apply(_job())
    _step(cluster)
    cluster.server_ready("kimi")
    _step(cluster)
    assert cluster.batch_job("kimi-generator") is not None
    for attempt, finished in enumerate(["2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"]):
        cluster.generator_exited(
            f"kimi-generator-try{attempt}",
            code,
            f"older attempt {attempt}" if attempt == 0 else last_words,
            finished_at=finished,
        )
    cluster.finish_generator("kimi", succeeded=False)
    cond = _failed(_step(cluster))
    assert cond["reason"] == "GeneratorFailed"
    for w in words:
        assert w in cond["message"], cond["message"]
    assert "older attempt" not in cond["message"]  # the latest attempt's words, not the first
    assert cluster.deployment("kimi-server-0")["spec"]["replicas"] == 0
    assert cluster.batch_job("kimi-generator") is not None  # kept: `kubectl logs` still works
