"""The Jobs before the server, as rendered: strict Kubernetes 1.30 validation, creation order
(model download, then ConfigMap and preflight, then the server), and what each mounts."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
import yaml

from draftgen.contract.generator_cli import ExitCode
from draftgen.controller.render import render_all
from draftgen.controller.settings import OperatorSettings

from .harness import REPO


def _hub_job() -> dict:
    raw = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    raw["spec"]["model"].update(
        weights="hf://moonshotai/Kimi-K2.5",
        revision="4f1a2b3c4d5e6f708192a3b4c5d6e7f809102132",
        hfTokenSecret={"name": "hf", "key": "token"},
    )
    return raw


def _objects(raw: dict, **settings) -> list[dict]:
    return render_all("kimi", "drafters", raw["spec"], OperatorSettings(**settings))


def _container(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]["containers"][0]


def test_the_download_job_comes_before_the_preflight_and_the_server_and_validates_strictly():
    objs = _objects(_hub_job())
    order = [f"{o['kind']}/{o['metadata']['name']}" for o in objs]
    assert order[:3] == [
        "Job/kimi-model-download",
        "ConfigMap/kimi-generator",
        "Job/kimi-preflight",
    ]
    assert order.index("Job/kimi-preflight") < order.index("Deployment/kimi-server-0")
    for obj in objs:
        kubernetes_validate.validate(obj, "1.30", strict=True)


def test_the_download_job_fetches_the_pinned_revision_onto_the_volume_with_a_secret_token():
    download = _objects(_hub_job())[0]
    c = _container(download)
    args = c["args"]
    assert args[0] == "download"
    assert args[args.index("--repo") + 1] == "moonshotai/Kimi-K2.5"
    assert args[args.index("--revision") + 1] == "4f1a2b3c4d5e6f708192a3b4c5d6e7f809102132"
    assert args[args.index("--to") + 1] == "/models/hub/moonshotai/Kimi-K2.5"
    assert {"name": "model", "mountPath": "/models"} in c["volumeMounts"]  # writable
    token = next(e for e in c["env"] if e["name"] == "HF_TOKEN")
    assert token == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}},
    }
    assert "nvidia.com/gpu" not in str(c["resources"])
    rules = download["spec"]["podFailurePolicy"]["rules"]
    assert rules[0]["onExitCodes"]["values"] == [int(ExitCode.INVALID), int(ExitCode.DISK_FULL)]
    assert download["spec"]["backoffLimit"] >= 3  # each retry resumes


def test_the_server_and_generator_read_the_volume_path_offline():
    objs = {f"{o['kind']}/{o['metadata']['name']}": o for o in _objects(_hub_job())}
    server = _container(objs["Deployment/kimi-server-0"])
    assert server["args"][server["args"].index("--model-path") + 1] == (
        "/models/hub/moonshotai/Kimi-K2.5"
    )
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in server["env"]
    document = yaml.safe_load(objs["ConfigMap/kimi-generator"]["data"]["job.yaml"])
    assert document["spec"]["model"]["weights"] == "/models/hub/moonshotai/Kimi-K2.5"
    assert "revision" not in document["spec"]["model"]
    generator = _container(objs["Job/kimi-generator"])
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in generator["env"]


def test_the_preflight_job_is_cpu_only_reads_everything_read_only_and_fails_fast():
    objs = {f"{o['kind']}/{o['metadata']['name']}": o for o in _objects(_hub_job())}
    pre = objs["Job/kimi-preflight"]
    c = _container(pre)
    assert c["args"][:3] == ["preflight", "--job", "/etc/draftgen/job.yaml"]
    assert c["args"][c["args"].index("--inputs") + 1] == "/data"
    assert c["image"] == _container(objs["Job/kimi-generator"])["image"]
    assert "nvidia.com/gpu" not in str(c["resources"])
    assert all(m.get("readOnly") for m in c["volumeMounts"] if m["name"] != "tmp")
    assert {m["name"] for m in c["volumeMounts"]} == {"job", "inputs", "model", "tmp"}
    codes = pre["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"]
    assert codes == [int(ExitCode.INVALID), int(ExitCode.INTEGRITY)]


@pytest.mark.parametrize("weights", ["/models/Kimi-K2.5", "hf://moonshotai/Kimi-K2.5"])
def test_without_the_preflight_and_for_local_weights_nothing_comes_before_the_server(weights):
    raw = copy.deepcopy(_hub_job())
    raw["spec"]["model"]["weights"] = weights
    if not weights.startswith("hf://"):
        raw["spec"]["model"].pop("revision")
    kinds = [o["metadata"]["name"] for o in _objects(raw, preflight=False)]
    first = "kimi-model-download" if weights.startswith("hf://") else "kimi-server"
    assert kinds[0] == first and "kimi-preflight" not in kinds


def test_a_tokenizer_from_another_repository_is_still_read_from_the_hub():
    raw = _hub_job()
    raw["spec"]["model"]["tokenizer"] = "hf://moonshotai/Kimi-K2.5-tokenizer"
    objs = {f"{o['kind']}/{o['metadata']['name']}": o for o in _objects(raw)}
    document = yaml.safe_load(objs["ConfigMap/kimi-generator"]["data"]["job.yaml"])
    assert document["spec"]["model"]["tokenizer"] == "hf://moonshotai/Kimi-K2.5-tokenizer"
    for name in ("Job/kimi-preflight", "Job/kimi-generator"):
        env = {e["name"] for e in _container(objs[name])["env"]}
        assert "HF_HUB_OFFLINE" not in env and "HF_TOKEN" in env, name
