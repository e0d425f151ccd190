"""Suspend and resume, a budget edited while running, an operator restart mid-job, rejected
specs, and failures a person must act on — kopf against the Kubernetes emulator."""

from __future__ import annotations

import yaml

from .harness import Cluster, example_job, running_operator, wait_for


def _start_generating(cluster: Cluster, name: str = "kimi") -> None:
    wait_for(lambda: cluster.deployment(f"{name}-server-0"), "the server Deployment")
    cluster.server_ready(name)
    wait_for(lambda: cluster.batch_job(f"{name}-generator"), "the generator Job")
    cluster.wait_phase(name, "Generating")


def _server_requests(cluster: Cluster) -> list[dict]:
    return [
        r
        for r in cluster.emu.requests()
        if r["plural"] == "deployments"
        and r["agent"].startswith("draftgen-operator")
        and r["method"] != "GET"
    ]


def test_suspend_stops_generator_and_scales_server_to_zero_then_resumes(
    cluster: Cluster, operator
) -> None:
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)

    cluster.edit_spec("kimi", {"suspend": True})
    status = cluster.wait_phase("kimi", "Suspended")
    assert cluster.condition("kimi", "Suspended")["status"] == "True"
    assert "output kept" in status["message"]
    wait_for(lambda: cluster.batch_job("kimi-generator") is None, "the generator Job deleted")
    assert cluster.deployment("kimi-server-0")["spec"]["replicas"] == 0
    assert cluster.configmap("kimi-generator") is not None  # the job document stays
    cluster.server_scaled_down()

    cluster.edit_spec("kimi", {"suspend": False})
    cluster.wait_phase("kimi", "StartingServer")
    assert cluster.deployment("kimi-server-0")["spec"]["replicas"] == 1
    assert cluster.condition("kimi", "Suspended") is None
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job again")
    cluster.wait_phase("kimi", "Generating")
    # The same Deployment was scaled, never re-created; the generator Job was started twice.
    assert cluster.emu.creates("deployments") == ["kimi-server-0"]
    assert cluster.emu.creates("jobs") == ["kimi-generator", "kimi-generator"]


def test_budget_edit_restarts_only_the_generator(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)
    server_writes = len(_server_requests(cluster))
    old_hash = cluster.batch_job("kimi-generator")["metadata"]["annotations"][
        "draftgen.io/config-hash"
    ]

    datasets = cluster.job("kimi")["spec"]["datasets"]
    datasets[0]["budget"] = {"completionTokens": 20_000_000}
    cluster.edit_spec("kimi", {"datasets": datasets})

    def restarted():
        job = cluster.batch_job("kimi-generator")
        return job and job["metadata"]["annotations"]["draftgen.io/config-hash"] != old_hash

    wait_for(restarted, "the generator Job restarted with the new document")
    doc = yaml.safe_load(cluster.configmap("kimi-generator")["data"]["job.yaml"])
    assert doc["spec"]["datasets"][0]["budget"] == {"completionTokens": 20_000_000}
    assert cluster.emu.creates("jobs") == ["kimi-generator", "kimi-generator"]
    # The server was not touched: no new Deployment, no patch, no delete.
    assert cluster.emu.creates("deployments") == ["kimi-server-0"]
    assert len(_server_requests(cluster)) == server_writes
    status = cluster.wait_phase("kimi", "Generating")
    assert status["observedGeneration"] == 2


def test_operator_restart_mid_job_creates_nothing_twice(cluster: Cluster) -> None:
    with running_operator():
        cluster.apply(example_job(cluster.ns))
        _start_generating(cluster)
    before = cluster.status("kimi")
    # While no operator runs, the generator finishes.
    cluster.finish_generator("kimi")

    with running_operator():
        status = cluster.wait_phase("kimi", "Succeeded")
        wait_for(lambda: cluster.deployment("kimi-server-0") is None, "the server torn down")
    assert status["startTime"] == before["startTime"]
    for plural, names in {
        "deployments": ["kimi-server-0"],
        "services": ["kimi-server"],
        "configmaps": ["kimi-generator"],
        "jobs": ["kimi-generator"],
    }.items():
        assert cluster.emu.creates(plural) == names, plural


def test_invalid_spec_is_reported_with_field_and_fix_then_accepted(
    cluster: Cluster, operator
) -> None:
    job = example_job(cluster.ns)
    job["spec"]["server"]["hierarchicalCache"] = {"enabled": True, "sizeGBPerRank": 300}
    del job["spec"]["output"]["claimName"]
    cluster.apply(job)

    status = cluster.wait_phase("kimi", "Failed")
    cond = cluster.condition("kimi", "SpecValid")
    assert cond["status"] == "False" and cond["reason"] == "InvalidSpec"
    # Names the field and the fix: hicache is per rank (300 × 8 = 2.4 TB of a 449 GB host).
    assert "hierarchicalCache.sizeGBPerRank" in cond["message"]
    assert "at most 49" in cond["message"]
    assert "spec rejected" in status["message"]
    assert cluster.deployment("kimi-server-0") is None

    cluster.edit_spec(
        "kimi",
        {
            "server": {
                **job["spec"]["server"],
                "hierarchicalCache": {"enabled": True, "sizeGBPerRank": 48},
            }
        },
    )
    status = cluster.wait_phase("kimi", "Failed")
    wait_for(
        lambda: (
            "output.claimName" in cluster.condition("kimi", "SpecValid")["message"]
            and "hierarchicalCache" not in cluster.condition("kimi", "SpecValid")["message"]
        ),
        "the remaining problem alone",
    )
    cluster.edit_spec("kimi", {"output": {"claimName": "drafter-data", "path": "x"}})
    cluster.wait_phase("kimi", "StartingServer")
    assert cluster.condition("kimi", "SpecValid")["status"] == "True"
    assert cluster.deployment("kimi-server-0") is not None


def test_crash_looping_server_fails_with_an_actionable_reason(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.put_crashed_server({"reason": "OOMKilled", "exitCode": 137})
    status = cluster.wait_phase("kimi", "Failed")
    cond = cluster.condition("kimi", "Failed")
    assert cond["reason"] == "ServerOutOfHostMemory"
    assert "sizeGBPerRank" in cond["message"]
    assert status["completionTime"]
    # The GPUs are given back; the Deployment stays for inspection.
    wait_for(
        lambda: cluster.deployment("kimi-server-0")["spec"]["replicas"] == 0,
        "the server scaled to zero",
    )
    assert cluster.batch_job("kimi-generator") is None


def test_generator_out_of_retries_fails_with_its_last_words(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)
    cluster.generator_exited("kimi-generator-fail1", 3, "integrity: <think> is split into 3 tokens")
    cluster.finish_generator("kimi", succeeded=False)
    cluster.wait_phase("kimi", "Failed")
    cond = cluster.condition("kimi", "Failed")
    assert cond["reason"] == "GeneratorFailed"
    assert "<think> is split" in cond["message"] and "exited with code 3" in cond["message"]
    assert "output so far is kept" in cond["message"]


def test_a_generator_failed_on_its_first_attempt_says_so(cluster: Cluster, operator) -> None:
    """A fatal exit fails the Job at once (podFailurePolicy): no retries were made, whatever
    backoffLimit allowed."""
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)
    cluster.generator_exited("kimi-generator-fail1", 3, "integrity: <think> is split into 3 tokens")
    cluster.finish_generator(
        "kimi", succeeded=False, failed=1, reason="PodFailurePolicy", message="exit code 3"
    )
    cluster.wait_phase("kimi", "Failed")
    message = cluster.condition("kimi", "Failed")["message"]
    assert message.startswith("generator failed on its first attempt"), message
    assert "retries" not in message


def test_a_broken_edit_keeps_the_running_job_and_says_so(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)
    cluster.edit_spec(
        "kimi", {"server": {**cluster.job("kimi")["spec"]["server"], "memFractionStatic": 1.5}}
    )
    wait_for(
        lambda: cluster.condition("kimi", "SpecValid")["status"] == "False", "the edit rejected"
    )
    status = cluster.status("kimi")
    assert status["phase"] == "Generating"
    assert "still running the last accepted spec" in status["message"]
    assert "memFractionStatic" in status["message"]
    assert cluster.batch_job("kimi-generator") is not None
    assert cluster.deployment("kimi-server-0")["spec"]["replicas"] == 1


def test_ttl_deletes_a_finished_job_and_its_children(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns, ttlSecondsAfterFinished=0))
    _start_generating(cluster)
    cluster.finish_generator("kimi")
    wait_for(lambda: cluster.job("kimi") is None, "the GenerationJob deleted by its TTL")
    assert cluster.batch_job("kimi-generator") is None
    assert cluster.configmap("kimi-generator") is None
    assert cluster.deployment("kimi-server-0") is None


def test_ttl_deletes_a_job_that_failed_for_its_spec(cluster: Cluster, operator) -> None:
    """A rejected spec ends the job too: its TTL counts from the rejection."""
    bad = example_job(cluster.ns, ttlSecondsAfterFinished=0)
    bad["spec"]["server"]["hierarchicalCache"]["sizeGBPerRank"] = 300
    cluster.apply(bad)
    wait_for(lambda: cluster.job("kimi") is None, "the rejected GenerationJob deleted by its TTL")


def test_a_server_edit_rolls_the_same_deployment(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)
    before = cluster.deployment("kimi-server-0")
    server = {**cluster.job("kimi")["spec"]["server"], "memFractionStatic": 0.85}
    cluster.edit_spec("kimi", {"server": server})

    def rolled():
        dep = cluster.deployment("kimi-server-0")
        args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
        return args[args.index("--mem-fraction-static") + 1] == "0.85" and dep

    dep = wait_for(rolled, "the pod template replaced")
    assert (
        dep["metadata"]["annotations"]["draftgen.io/server-hash"]
        != before["metadata"]["annotations"]["draftgen.io/server-hash"]
    )
    assert dep["metadata"]["uid"] == before["metadata"]["uid"]
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    assert cluster.emu.creates("deployments") == ["kimi-server-0"]


def test_operator_only_edits_never_restart_generator_or_server(cluster: Cluster, operator) -> None:
    cluster.apply(example_job(cluster.ns))
    _start_generating(cluster)
    # While running: a TTL edit rewrites nothing the generator acts on.
    cluster.edit_spec("kimi", {"ttlSecondsAfterFinished": 86400})
    wait_for(lambda: cluster.status("kimi").get("observedGeneration") == 2, "the edit observed")
    cluster.finish_generator("kimi")
    cluster.wait_phase("kimi", "Succeeded")
    wait_for(lambda: cluster.deployment("kimi-server-0") is None, "the server torn down")
    # After success: keeping the server next time is no reason to start it again now.
    cluster.edit_spec("kimi", {"shutdownServerAfterCompletion": False})
    wait_for(lambda: cluster.status("kimi").get("observedGeneration") == 3, "the edit observed")
    assert cluster.status("kimi")["phase"] == "Succeeded"
    assert cluster.deployment("kimi-server-0") is None
    assert cluster.emu.creates("jobs") == ["kimi-generator"]
    assert cluster.emu.creates("deployments") == ["kimi-server-0"]
