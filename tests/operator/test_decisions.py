"""Pure decisions: crash reasons, progress from generator metrics, settings, admission."""

from __future__ import annotations

import pytest
import yaml
from prometheus_client import generate_latest

from draftgen.controller.observe import job_outcome, server_health
from draftgen.controller.readings import parse_metrics
from draftgen.controller.settings import OperatorSettings
from draftgen.controller.validate import admission_problems
from draftgen.generator.telemetry.metrics import GeneratorMetrics

from .harness import REPO


def _pod(restarts: int, last: dict | None = None, waiting: str | None = None) -> dict:
    cs = {"name": "sglang", "restartCount": restarts, "state": {}}
    if last:
        cs["lastState"] = {"terminated": last}
    if waiting:
        cs["state"] = {"waiting": {"reason": waiting, "message": "pull failed"}}
    return {"metadata": {"name": "j-server-0-x"}, "status": {"containerStatuses": [cs]}}


def test_cuda_out_of_memory_names_the_memory_knobs() -> None:
    health = server_health(
        [
            _pod(
                3,
                {
                    "reason": "Error",
                    "exitCode": 1,
                    "message": "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                    "allocate 2.00 GiB",
                },
            )
        ],
        crash_loop_restarts=3,
    )
    reason, message = health.failure
    assert reason == "ServerOutOfGPUMemory"
    assert "memFractionStatic" in message and "CUDA out of memory" in message


def test_restarts_below_the_threshold_do_not_fail_the_job() -> None:
    health = server_health([_pod(2, {"reason": "OOMKilled", "exitCode": 137})], 3)
    assert health.failure is None and health.restarts == 2


def test_other_crashes_point_at_the_logs() -> None:
    reason, message = server_health(
        [_pod(5, {"reason": "Error", "exitCode": 1, "message": "ValueError: bad flag"})], 3
    ).failure
    assert reason == "ServerCrashLoop"
    assert "kubectl logs --previous j-server-0-x" in message and "bad flag" in message


def _unscheduled(name: str, message: str, **reason: str) -> dict:
    """A pending pod the scheduler could not place (with a `reason` or, as some are, none)."""
    condition = {"type": "PodScheduled", "status": "False", **reason, "message": message}
    return {"metadata": {"name": name}, "status": {"conditions": [condition]}}


def test_image_pull_errors_and_unschedulable_pods_are_reported_while_waiting() -> None:
    health = server_health([_pod(0, waiting="ImagePullBackOff")], 3)
    assert health.failure is None and health.waiting[0] == "ImagePullError"
    pending = _unscheduled(
        "p", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", reason="Unschedulable"
    )
    reason, message = server_health([pending], 3).waiting
    assert reason == "Unschedulable" and "Insufficient nvidia.com/gpu" in message


def test_job_outcomes() -> None:
    assert job_outcome({"status": {}})[0] == "running"
    assert (
        job_outcome({"status": {"conditions": [{"type": "Complete", "status": "True"}]}})[0]
        == "succeeded"
    )
    outcome, message = job_outcome(
        {
            "status": {
                "conditions": [
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": "PodFailurePolicy",
                        "message": "Container generator exited with 3",
                    }
                ]
            }
        }
    )
    assert outcome == "failed" and "exited with 3" in message


def test_progress_from_the_generators_own_metrics() -> None:
    m = GeneratorMetrics()
    m.budget.labels("code").set(1000)
    m.completion_tokens.labels("code", "stop").inc(700)
    m.completion_tokens.labels("code", "length").inc(400)
    m.samples.labels("code", "stop").inc(2)
    m.samples.labels("code", "length").inc(1)
    m.dataset_done.labels("code").set(1)
    m.completion_tokens.labels("chat", "stop").inc(50)  # no budget: every row
    m.eta.set(float("inf"))
    got = parse_metrics(generate_latest(m.registry).decode())
    by_name = {d.name: d for d in got.datasets}
    assert by_name["code"].completion_tokens == 1100 and by_name["code"].samples == 3
    assert by_name["code"].overshoot_percent == 10.0 and by_name["code"].done
    assert by_name["chat"].budget_completion_tokens is None
    assert got.eta_seconds is None  # an infinite ETA is "unknown", not a number
    assert got.percent() == "1/2 datasets"


def test_settings_from_env_and_a_bad_value_names_the_variable() -> None:
    s = OperatorSettings.from_env(
        {
            "DRAFTGEN_OPERATOR_POLL_INTERVAL_SECONDS": "2.5",
            "DRAFTGEN_OPERATOR_NAMESPACES": "a, b",
            "DRAFTGEN_OPERATOR_STANDALONE": "true",
            "DRAFTGEN_OPERATOR_SERVER_TENSOR_PARALLEL_SIZE": "4",
        }
    )
    assert s.poll_interval_seconds == 2.5 and s.namespaces == ("a", "b")
    assert s.standalone is True and s.server_tensor_parallel_size == 4
    with pytest.raises(ValueError, match="DRAFTGEN_OPERATOR_CRASH_LOOP_RESTARTS"):
        OperatorSettings.from_env({"DRAFTGEN_OPERATOR_CRASH_LOOP_RESTARTS": "many"})


def test_admission_refuses_what_the_status_would_report() -> None:
    body = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    assert admission_problems(body, OperatorSettings()) == []
    body["spec"]["server"]["kvCacheDtype"] = "fp8_e4m3"
    body["metadata"]["name"] = "x" * 41
    problems = admission_problems(body, OperatorSettings())
    assert any(p.startswith("metadata.name") for p in problems)
    assert any("allowLossyKVCache" in p for p in problems)


def test_api_client_sends_the_kubeconfig_token_once_prefixed(tmp_path, monkeypatch) -> None:
    from draftgen.controller.kube import Kube

    config = tmp_path / "config"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": "https://k8s.example:6443",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "s3cret"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kube = Kube.from_environment()
    try:
        assert kube._token_fn() == "Bearer s3cret"
        assert str(kube._http.base_url).startswith("https://k8s.example:6443")
    finally:
        kube.close()


def test_plan_figures_from_the_observed_kv_pool_and_progress() -> None:
    from draftgen.controller.plan_status import plan_figures
    from draftgen.spec import DatasetProgress, GenerationJobStatus, ServerStatus, load_job

    job = load_job(REPO / "examples" / "kimi-k2.5.yaml")
    status = GenerationJobStatus()
    assert plan_figures("kimi", "ns", job.spec, status) is None  # no server figure yet
    status.server = ServerStatus(max_total_num_tokens=159_277)
    fresh = plan_figures("kimi", "ns", job.spec, status)
    assert fresh.kv_capacity_tokens == 159_277
    assert fresh.concurrent_decodes and fresh.throughput_ceiling_tokens_per_second
    # Half the work done at the measured rate: a shorter ETA than from scratch.
    status.datasets = [
        DatasetProgress(name=d.name, completion_tokens=5_000_000) for d in job.spec.datasets
    ]
    status.throughput_tokens_per_second = 930.0
    live = plan_figures("kimi", "ns", job.spec, status)
    assert live.eta_seconds < fresh.eta_seconds


def test_a_generator_that_cannot_start_says_why() -> None:
    from draftgen.controller.observe import generator_stuck

    pull = {
        "metadata": {"name": "g"},
        "status": {
            "containerStatuses": [
                {
                    "name": "generator",
                    "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}},
                }
            ]
        },
    }
    reason, message = generator_stuck([pull])
    assert reason == "GeneratorImagePullError" and "generator.image" in message
    pending = _unscheduled("g", 'persistentvolumeclaim "drafter-data" not found')
    reason, message = generator_stuck([pending])
    assert reason == "GeneratorUnschedulable" and "drafter-data" in message
    assert generator_stuck([{"metadata": {"name": "g"}, "status": {"phase": "Running"}}]) is None
