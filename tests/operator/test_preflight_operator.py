"""The operator's steps before the GPUs, one reconcile at a time against the emulator: the model
download Job first (hf:// weights), then the preflight Job, then the server — and a preflight
that fails leaves no server ever created (the emulator's request log).

The preflight Job's command runs here for real (`draftgen preflight` with the rendered args,
tiny-kimi's tokenizer standing in for the models volume, a temporary inputs volume); the test
plays the kubelet and the Job controller by copying its exit code and termination message into
a pod and the Job's status, as a cluster would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from draftgen.cli import main
from draftgen.controller import names
from draftgen.spec.status import PreflightStatus

from .harness import BATCH, Cluster, example_job
from .probes import reconcile_steps
from .test_preflight_inputs import CASES, GOOD, KIMI_TOKENS, _write


@pytest.fixture
def step(cluster: Cluster) -> Iterator:
    with reconcile_steps(cluster, preflight=True) as run:
        yield run


def _end_job(
    cluster: Cluster, name: str, component: str, container: str, code: int, message: str
) -> None:
    """What the kubelet and the Job controller report for a Job whose one pod exited."""
    cluster.put_pod(
        f"{name}-pod01",
        {names.JOB_LABEL: "kimi", names.COMPONENT_LABEL: component},
        {
            "phase": "Succeeded" if code == 0 else "Failed",
            "containerStatuses": [
                {
                    "name": container,
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "message": message,
                            "finishedAt": "2026-12-01T14:00:00Z",
                        }
                    },
                }
            ],
        },
    )
    cond = (
        {"type": "Complete", "status": "True"}
        if code == 0
        else {
            "type": "Failed",
            "status": "True",
            "reason": "PodFailurePolicy",
            "message": f"exit code {code}",
        }
    )
    cluster.emu.patch(
        BATCH,
        "jobs",
        cluster.ns,
        name,
        {"status": {"succeeded": int(code == 0), "failed": int(code != 0), "conditions": [cond]}},
        subresource="status",
    )


def _created(cluster: Cluster) -> list[tuple[str, str]]:
    """(plural, name) of every object the operator created, in order."""
    return [
        (r["plural"], r["name"])
        for r in cluster.emu.requests()
        if r["method"] == "POST"
        and r["agent"].startswith("draftgen-operator")
        and r["plural"] != "events"
    ]


def _run_preflight_job(cluster: Cluster, tmp_path: Path) -> tuple[int, str]:
    """The preflight Job's container command, run here: its args as rendered, the job file from
    the ConfigMap it mounts, the report where the termination log would be."""
    job = cluster.batch_job("kimi-preflight")
    assert job is not None
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    config = cluster.configmap("kimi-generator")
    assert config is not None
    job_file, report = tmp_path / "job.yaml", tmp_path / "termination-log"
    job_file.write_text(config["data"]["job.yaml"])
    local = [
        str(job_file) if a == names.JOB_FILE else str(report) if a == "/dev/termination-log" else a
        for a in args
    ]
    assert local[0] == "preflight"
    code = main(local)
    return code, report.read_text()


def _local_job(cluster: Cluster, tmp_path: Path, tiny_kimi: Path, datasets: list, **model) -> dict:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    _write(inputs / "chat.jsonl", GOOD)
    _write(inputs / "bad-first.jsonl", ['{"id": "broken", "messages": [', *GOOD[:3]])
    _write(inputs / "prompts.jsonl", [{"prompt": f"say {i}"} for i in range(5)])
    raw = example_job(cluster.ns, datasets=datasets)
    raw["spec"]["inputs"] = {"claimName": "datasets", "mountPath": str(inputs)}
    raw["spec"]["model"].update(
        {
            "weights": str(tiny_kimi),
            "volume": {"claimName": "models", "mountPath": str(tiny_kimi.parent)},
            "specialTokens": KIMI_TOKENS,
            **model,
        }
    )
    raw["spec"]["server"]["tensorParallelSize"] = 1
    raw["spec"]["server"].pop("gpusPerReplica", None)
    return raw


@pytest.mark.parametrize("case", ["missing source", "malformed first row", "wrong special token"])
def test_a_failed_preflight_fails_the_job_and_no_server_is_ever_created(
    case, cluster, step, tmp_path, tiny_kimi
):
    datasets, model, expected, exit_code = CASES[case]
    cluster.apply(_local_job(cluster, tmp_path, tiny_kimi, datasets, **model))
    status = step()
    assert status["phase"] == "Preflight"
    assert _created(cluster) == [("configmaps", "kimi-generator"), ("jobs", "kimi-preflight")]

    code, message = _run_preflight_job(cluster, tmp_path)
    assert code == exit_code
    _end_job(cluster, "kimi-preflight", "preflight", names.PREFLIGHT_CONTAINER, code, message)
    status = step()
    assert status["phase"] == "Failed"
    for text in expected:
        assert text in status["message"], status["message"]
    assert "no server was created" in status["message"]
    # The failure is on InputsValid, not only on Generating ("Checking" was the old message).
    inputs_valid = {c["type"]: c for c in status["conditions"]}["InputsValid"]
    assert (inputs_valid["status"], inputs_valid["reason"]) == ("False", "PreflightFailed")
    assert inputs_valid["message"] == status["message"]
    report = PreflightStatus.model_validate(status["preflight"])
    assert not report.passed
    step()  # a later poll changes nothing
    assert not [
        p for p, _ in _created(cluster) if p in ("deployments", "services", "networkpolicies")
    ]
    assert (
        cluster.deployment("kimi-server-0") is None and cluster.batch_job("kimi-generator") is None
    )

    # Any spec edit runs the preflight again (the data may have been fixed meanwhile).
    cluster.edit_spec("kimi", {"ttlSecondsAfterFinished": 3600})
    assert step()["phase"] == "Preflight"
    assert cluster.emu.get(BATCH, "jobs", cluster.ns, "kimi-preflight") is None or (
        cluster.batch_job("kimi-preflight")["metadata"].get("deletionTimestamp")
    )


def test_a_passing_preflight_creates_the_server_with_its_report_in_status(
    cluster, step, tmp_path, tiny_kimi
):
    datasets = [{"name": "chat", "source": "chat.jsonl", "format": "messages"}]
    cluster.apply(_local_job(cluster, tmp_path, tiny_kimi, datasets))
    assert step()["phase"] == "Preflight"
    code, message = _run_preflight_job(cluster, tmp_path)
    assert code == 0
    _end_job(cluster, "kimi-preflight", "preflight", names.PREFLIGHT_CONTAINER, 0, message)
    status = step()
    assert status["phase"] == "StartingServer"
    chat = status["preflight"]["datasets"][0]
    assert (chat["name"], chat["rowsRead"], chat["samples"]) == ("chat", 32, 32)
    assert set(chat["promptTokens"]) == {"p50", "p90", "p99", "max"}
    order = [name for _, name in _created(cluster)]
    assert order.index("kimi-preflight") < order.index("kimi-server-0")
    cond = {c["type"]: c for c in status["conditions"]}["InputsValid"]
    assert (cond["status"], cond["reason"]) == ("True", "PreflightPassed")


def test_hf_weights_are_downloaded_before_the_preflight_and_the_server(cluster, step):
    raw = example_job(cluster.ns)
    raw["spec"]["model"].update(
        weights="hf://moonshotai/Kimi-K2.5",
        revision="main",
        hfTokenSecret={"name": "hf", "key": "token"},
    )
    cluster.apply(raw)
    status = step()
    assert status["phase"] == "DownloadingModel"
    assert status["model"]["path"] == "/models/hub/moonshotai/Kimi-K2.5"
    assert _created(cluster) == [("jobs", "kimi-model-download")]
    download = cluster.batch_job("kimi-model-download")
    args = download["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:5] == [
        "download",
        "--repo",
        "moonshotai/Kimi-K2.5",
        "--to",
        "/models/hub/moonshotai/Kimi-K2.5",
    ]
    assert step()["phase"] == "DownloadingModel"  # still running: nothing else is created
    assert len(_created(cluster)) == 1

    commit = "0123456789abcdef0123456789abcdef01234567"
    _end_job(
        cluster,
        "kimi-model-download",
        "model-download",
        names.DOWNLOAD_CONTAINER,
        0,
        json.dumps({"commit": commit}),
    )
    status = step()
    assert status["phase"] == "Preflight"
    assert status["model"]["commit"] == commit and status["model"]["progress"] == "done"
    # The preflight and later the generator read the weights from the volume, offline.
    document = cluster.configmap("kimi-generator")["data"]["job.yaml"]
    assert "weights: /models/hub/moonshotai/Kimi-K2.5" in document and "hf://" not in document

    _end_job(
        cluster,
        "kimi-preflight",
        "preflight",
        names.PREFLIGHT_CONTAINER,
        0,
        PreflightStatus(passed=True).model_dump_json(),
    )
    assert step()["phase"] == "StartingServer"
    order = [name for _, name in _created(cluster)]
    assert (
        order.index("kimi-model-download")
        < order.index("kimi-preflight")
        < order.index("kimi-server-0")
    )
    server = cluster.deployment("kimi-server-0")["spec"]["template"]["spec"]["containers"][0]
    assert (
        server["args"][server["args"].index("--model-path") + 1]
        == "/models/hub/moonshotai/Kimi-K2.5"
    )
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in server["env"]


def test_a_failed_download_fails_the_job_with_the_fix(cluster, step):
    raw = example_job(cluster.ns)
    raw["spec"]["model"]["weights"] = "hf://moonshotai/Kimi-K2.5"
    cluster.apply(raw)
    step()
    _end_job(
        cluster,
        "kimi-model-download",
        "model-download",
        names.DOWNLOAD_CONTAINER,
        2,
        "moonshotai/Kimi-K2.5@main: repository not found or not accessible",
    )
    status = step()
    assert status["phase"] == "Failed"
    assert (
        "repository not found" in status["message"] and "model.hfTokenSecret" in status["message"]
    )
    assert [p for p, _ in _created(cluster)] == ["jobs"]


def test_hf_weights_without_a_volume_are_refused_in_a_cluster_with_the_fix(cluster, step):
    raw = example_job(cluster.ns)
    raw["spec"]["model"]["weights"] = "hf://moonshotai/Kimi-K2.5"
    raw["spec"]["model"].pop("volume")
    cluster.apply(raw)
    status = step()
    assert status["phase"] == "Failed"
    assert "spec.model.volume: required for the hub weights" in status["message"]
    assert "model.volume: {claimName:" in status["message"]
    assert _created(cluster) == []


def test_through_the_real_handlers_a_missing_source_fails_before_any_server(
    cluster, monkeypatch, tmp_path, tiny_kimi
):
    """kopf running the operator's handlers (as in a cluster), the preflight turned on."""
    import dataclasses

    from draftgen.controller.handlers import state

    from .harness import running_operator, wait_for

    monkeypatch.setattr(state, "SETTINGS", dataclasses.replace(state.SETTINGS, preflight=True))
    datasets, model, expected, _ = CASES["missing source"]
    with running_operator():
        cluster.apply(_local_job(cluster, tmp_path, tiny_kimi, datasets, **model))
        cluster.wait_phase("kimi", "Preflight")
        wait_for(lambda: cluster.batch_job("kimi-preflight"), "the preflight Job")
        code, message = _run_preflight_job(cluster, tmp_path)
        _end_job(cluster, "kimi-preflight", "preflight", names.PREFLIGHT_CONTAINER, code, message)
        status = cluster.wait_phase("kimi", "Failed")
    assert expected[0] in status["message"]
    assert not [p for p, _ in _created(cluster) if p in ("deployments", "services")]
