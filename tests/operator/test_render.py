"""The manifests the operator renders: valid for Kubernetes 1.30 in strict mode, and what an SGLang
expert would write by hand for examples/kimi-k2.5.yaml."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
import yaml

from draftgen.controller import names
from draftgen.controller.render import render_all
from draftgen.controller.render import server as render_server
from draftgen.controller.settings import OperatorSettings, effective_spec
from draftgen.spec import parse_spec

from .harness import REPO


def _load(name: str) -> dict:
    return yaml.safe_load((REPO / "examples" / name).read_text())


def _render(raw: dict, settings: OperatorSettings | None = None) -> dict[str, dict]:
    objs = render_all(
        raw["metadata"]["name"], raw["metadata"].get("namespace", "default"), raw["spec"], settings
    )
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objs}


def _container(dep: dict) -> dict:
    return dep["spec"]["template"]["spec"]["containers"][0]


def _variants():
    kimi = _load("kimi-k2.5.yaml")
    demo = _load("demo.yaml")
    tweaked = copy.deepcopy(kimi)
    tweaked["spec"]["server"].update(
        replicas=2,
        maxRunningRequests=72,
        chunkedPrefillSize=8192,
        extraArgs=["--enable-mixed-chunk"],
        resources={"limits": {"memory": "440Gi"}},
    )
    tweaked["spec"]["model"]["hfTokenSecret"] = {"name": "hf", "key": "token"}
    tweaked["spec"]["generator"]["resources"] = {"requests": {"cpu": "4", "memory": "16Gi"}}
    dp_attention = copy.deepcopy(kimi)
    dp_attention["spec"]["server"].update(attentionDataParallelSize=4, decodeContextParallelSize=2)
    return {
        "kimi-k2.5": kimi,
        "demo": demo,
        "kimi-two-replicas": tweaked,
        "kimi-dp-attention": dp_attention,
    }


@pytest.mark.parametrize("name", list(_variants()))
def test_every_manifest_passes_strict_kubernetes_1_30_validation(name: str) -> None:
    objs = _render(_variants()[name])
    kinds = sorted(o["kind"] for o in objs.values())
    assert "Deployment" in kinds and "Job" in kinds and "Service" in kinds
    for obj in objs.values():
        # Raises on unknown fields (strict) or schema violations.
        kubernetes_validate.validate(obj, "1.30", strict=True)


def test_kimi_server_flags_come_from_the_spec() -> None:
    dep = _render(_load("kimi-k2.5.yaml"))["Deployment/kimi-k25-eagle3-server-0"]
    args = _container(dep)["args"]

    def flag(name: str) -> str:
        return args[args.index(name) + 1]

    assert flag("--model-path") == "/models/Kimi-K2.5"
    assert flag("--tp-size") == "8"
    assert flag("--mem-fraction-static") == "0.88"
    assert flag("--kv-cache-dtype") == "bf16"
    # Unset with auto concurrency: 0.1, said explicitly (0.5 with fixed: test_conservativeness).
    assert flag("--schedule-conservativeness") == "0.1"
    assert flag("--context-length") == "65536"
    assert flag("--port") == "30000" and flag("--host") == "0.0.0.0"
    # hicache is per rank: 48, not 384.
    assert "--enable-hierarchical-cache" in args and flag("--hicache-size") == "48"
    assert "--enable-metrics" in args and "--trust-remote-code" in args
    assert "--max-running-requests" not in args  # unset in the spec: SGLang decides
    resources = _container(dep)["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == "8"
    # The scheduler is told about the 384 GB the hierarchical cache pins.
    assert resources["requests"]["memory"] == "384G"


def test_the_attention_layout_is_rendered_as_sglang_0_5_23_spells_it() -> None:
    args = _container(
        _render(_variants()["kimi-dp-attention"])["Deployment/kimi-k25-eagle3-server-0"]
    )["args"]
    assert args[args.index("--attn-dp-size") + 1] == "4"
    assert args[args.index("--dcp-size") + 1] == "2"
    assert args[args.index("--tp-size") + 1] == "8"
    # Not the deprecated spelling, and nothing at all for plain TP (SGLang's default, 1).
    assert "--enable-dp-attention" not in args and "--dp-size" not in args
    plain = _container(_render(_load("kimi-k2.5.yaml"))["Deployment/kimi-k25-eagle3-server-0"])
    assert not {"--attn-dp-size", "--dcp-size"} & set(plain["args"])


def test_kimi_server_pod_has_probes_shm_readonly_model_and_no_privileges() -> None:
    dep = _render(_load("kimi-k2.5.yaml"))["Deployment/kimi-k25-eagle3-server-0"]
    pod = dep["spec"]["template"]["spec"]
    c = _container(dep)
    startup = c["startupProbe"]
    assert startup["httpGet"]["path"] == "/health_generate"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 30 * 60
    assert c["readinessProbe"]["httpGet"]["path"] == "/health_generate"
    assert c["readinessProbe"]["timeoutSeconds"] > 20  # SGLang waits up to 20 s for a token
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    env = {e["name"]: e for e in c["env"]}
    assert env["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"]["value"] == "0"
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
    assert vols["model"]["persistentVolumeClaim"] == {"claimName": "models", "readOnly": True}
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["model"]["readOnly"] is True and mounts["dshm"]["mountPath"] == "/dev/shm"
    # Writable paths are exactly the explicit emptyDirs.
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")} == {
        "/dev/shm",
        "/tmp",
        "/home/sglang",
    }
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    # Stable per-pod DNS through the headless Service; GPUs never double-booked by a surge.
    assert pod["hostname"] == "kimi-k25-eagle3-server-0"
    assert pod["subdomain"] == "kimi-k25-eagle3-server"
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-RTX-PRO-6000-Blackwell"}
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == "30000"
    assert dep["spec"]["template"]["metadata"]["labels"]["draftgen.io/component"] == "server"


def test_hf_token_only_through_a_secret_reference() -> None:
    raw = _variants()["kimi-two-replicas"]
    objs = _render(raw)
    for key in ("Deployment/kimi-k25-eagle3-server-0", "Job/kimi-k25-eagle3-generator"):
        c = objs[key]["spec"]["template"]["spec"]["containers"][0]
        token = [e for e in c["env"] if e["name"] == "HF_TOKEN"]
        assert token == [
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
        ]
        assert "token" not in " ".join(c.get("args", []))


def test_replicas_each_get_a_deployment_and_an_endpoint() -> None:
    objs = _render(_variants()["kimi-two-replicas"])
    assert "Deployment/kimi-k25-eagle3-server-1" in objs
    args = objs["Job/kimi-k25-eagle3-generator"]["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    servers = [args[i + 1] for i, a in enumerate(args) if a == "--server"]
    assert servers == [
        f"http://kimi-k25-eagle3-server-{i}.kimi-k25-eagle3-server.drafters.svc:30000"
        for i in (0, 1)
    ]
    dep_args = _container(objs["Deployment/kimi-k25-eagle3-server-1"])["args"]
    assert dep_args[-1] == "--enable-mixed-chunk"
    assert dep_args[dep_args.index("--max-running-requests") + 1] == "72"
    # The user's memory limit is kept next to the GPU limit.
    limits = _container(objs["Deployment/kimi-k25-eagle3-server-1"])["resources"]["limits"]
    assert limits == {"memory": "440Gi", "nvidia.com/gpu": "8"}


def test_generator_job_mounts_only_the_output_writable() -> None:
    job = _render(_load("kimi-k2.5.yaml"))["Job/kimi-k25-eagle3-generator"]
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["command"] == ["draftgen"]
    args = c["args"]
    assert args[:3] == ["generate", "--job", names.JOB_FILE]
    assert args[args.index("--output") + 1] == "/output/kimi-k2.5/eagle3-v1"
    assert args[args.index("--inputs") + 1] == "/data"
    assert args[args.index("--metrics-port") + 1] == "9400"
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert not mounts["output"].get("readOnly")
    assert all(m.get("readOnly") for n, m in mounts.items() if n not in ("output", "tmp"))
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["output"]["persistentVolumeClaim"] == {"claimName": "drafter-data"}
    assert vols["inputs"]["persistentVolumeClaim"]["readOnly"] is True
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 6
    fatal = job["spec"]["podFailurePolicy"]["rules"][0]
    assert fatal["action"] == "FailJob" and 3 in fatal["onExitCodes"]["values"]
    assert job["metadata"]["labels"]["draftgen.io/job"] == "kimi-k25-eagle3"


def test_config_map_holds_the_users_document_without_status() -> None:
    raw = _load("kimi-k2.5.yaml")
    raw["status"] = {"phase": "Generating"}
    cm = _render(raw)["ConfigMap/kimi-k25-eagle3-generator"]
    doc = yaml.safe_load(cm["data"]["job.yaml"])
    assert doc["spec"] == raw["spec"] and "status" not in doc
    assert doc["metadata"] == {"name": "kimi-k25-eagle3", "namespace": "drafters"}


def test_operator_defaults_fill_only_fields_the_job_leaves_unset() -> None:
    settings = OperatorSettings(
        server_image="registry.local/sglang:pinned",
        server_mem_fraction_static=0.8,
        server_tensor_parallel_size=4,
        generator_image="registry.local/draftgen:1",
    )
    raw = _load("kimi-k2.5.yaml")
    spec = parse_spec(effective_spec(raw["spec"], settings))
    assert spec.server.image == "registry.local/sglang:pinned"  # unset in the job
    assert spec.server.mem_fraction_static == 0.88  # set in the job: kept
    assert spec.server.tensor_parallel_size == 8  # set in the job: kept
    assert spec.generator.image == "registry.local/draftgen:1"
    raw["spec"]["server"].pop("tensorParallelSize")
    raw["spec"]["server"].pop("hierarchicalCache")
    spec = parse_spec(effective_spec(raw["spec"], settings))
    assert spec.server.tensor_parallel_size == 4
    # The stored spec itself is never changed.
    assert "image" not in raw["spec"]["server"]


def test_server_template_hash_changes_only_with_the_server() -> None:
    raw = _load("kimi-k2.5.yaml")
    settings = OperatorSettings()

    def digest(spec_raw: dict) -> str:
        dep = render_server.deployment(
            parse_spec(effective_spec(spec_raw, settings)), "j", "ns", 0, settings
        )
        return dep["metadata"]["annotations"][names.SERVER_HASH_ANNOTATION]

    base = digest(raw["spec"])
    edited = copy.deepcopy(raw["spec"])
    edited["datasets"][0]["budget"] = {"completionTokens": 1}
    assert digest(edited) == base
    edited["server"]["memFractionStatic"] = 0.85
    assert digest(edited) != base


def test_docs_show_the_manifests_the_code_renders() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "render_example.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    doc = (REPO / "docs" / "operator.md").read_text()
    assert "--hicache-size\n        - '48'" in doc


def test_generator_command_line_is_what_draftgen_generate_parses() -> None:
    import argparse

    from draftgen.contract.job_argument import job_files
    from draftgen.generator import cli as generate_cli

    job = _render(_variants()["kimi-two-replicas"])["Job/kimi-k25-eagle3-generator"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["draftgen"] and container["args"][0] == "generate"
    parser = argparse.ArgumentParser()
    generate_cli.add_arguments(parser)
    args = parser.parse_args(container["args"][1:])
    assert job_files(args) == ["/etc/draftgen/job.yaml"]
    assert args.servers == [
        f"http://kimi-k25-eagle3-server-{i}.kimi-k25-eagle3-server.drafters.svc:30000"
        for i in (0, 1)
    ]
    assert str(args.output) == "/output/kimi-k2.5/eagle3-v1"
    assert str(args.inputs) == "/data"
    assert args.metrics_port == 9400
    # The job file is where the ConfigMap is mounted.
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["job"] + "/job.yaml" == job_files(args)[0]
    # Every metric series names its GenerationJob (docs/metrics.md).
    assert (args.generationjob, args.namespace) == ("kimi-k25-eagle3", "drafters")
    # No spec.exports: no export steps, no result file.
    assert args.exports_root is None and args.result_file is None


def test_exports_run_in_the_generator_job_and_report_through_the_termination_message() -> None:
    import argparse

    from draftgen.contract.generator_cli import ExitCode
    from draftgen.generator import cli as generate_cli

    raw = _load("kimi-k2.5.yaml")
    raw["spec"]["exports"] = [{"format": "parquet", "path": "exports/kimi-parquet"}]
    job = _render(raw)["Job/kimi-k25-eagle3-generator"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    parser = argparse.ArgumentParser()
    generate_cli.add_arguments(parser)
    args = parser.parse_args(container["args"][1:])
    # Exports go below the output volume's mount, the records' volume (the only writable one).
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert str(args.exports_root) == mounts["output"] == "/output"
    assert str(args.result_file) == container.get("terminationMessagePath", "/dev/termination-log")
    # A failed export fails the Job at once: a retry would regenerate nothing and fail the same.
    rule = job["spec"]["podFailurePolicy"]["rules"][0]
    assert rule["action"] == "FailJob"
    assert int(ExitCode.EXPORT_FAILED) in rule["onExitCodes"]["values"]
