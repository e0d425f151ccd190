"""Nobody let in: pods run unprivileged, RBAC grants exactly what the operator does, a Hugging
Face token only ever travels as a secret reference, sources and outputs stay on their volumes,
and documents are parsed safely."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from draftgen.controller.render import render_all
from draftgen.controller.settings import OperatorSettings
from draftgen.spec import SpecError, load_job, parse_job
from tests.chart.rendering import render as render_chart
from tests.operator.harness import Cluster, example_job, running_operator, wait_for

from .flaky_cluster import OPERATOR_AGENTS, FlakyEmulatorThread
from .gen_run import generate_args

REPO = Path(__file__).resolve().parents[2]

TOKEN = "hf_CANARYtokenDoNotLeak0123456789"
WORKLOADS = ("Deployment", "Job", "StatefulSet", "DaemonSet", "Pod")


# ---- rendered pods ---------------------------------------------------------------------------


def _job_variants() -> list[dict]:
    base = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    demo = yaml.safe_load((REPO / "examples" / "demo.yaml").read_text())
    with_token = copy.deepcopy(base)
    with_token["spec"]["model"]["hfTokenSecret"] = {"name": "hf", "key": "token"}
    with_token["spec"]["model"]["weights"] = "hf://moonshotai/Kimi-K2.5"
    with_token["spec"]["model"].pop("volume", None)
    with_token["spec"]["inputs"] = {"claimName": "datasets", "mountPath": "/data"}
    replicas = copy.deepcopy(base)
    replicas["spec"]["server"]["replicas"] = 2
    return [base, demo, with_token, replicas]


def _rendered_workloads() -> list[tuple[str, dict]]:
    out = []
    for job in _job_variants():
        for obj in render_all(job["metadata"]["name"], "ns", job["spec"], OperatorSettings()):
            if obj["kind"] in WORKLOADS:
                out.append((f"operator:{obj['metadata']['name']}", obj))
    for values in ({}, {"operator": {"webhook": {"enabled": True, "certSecret": "tls"}}}):
        for obj in render_chart(values):
            if obj["kind"] in WORKLOADS:
                out.append((f"chart:{obj['metadata']['name']}", obj))
    return out


def _pod_spec(obj: dict) -> dict:
    return obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]


# SGLang writes caches and temp files: each must point into a writable mount, nowhere else.
PATH_VARS = (
    "HOME",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "HF_HOME",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "HF_HUB_CACHE",
    "TRANSFORMERS_CACHE",
)


def test_every_pod_runs_unprivileged_with_a_read_only_root():
    workloads = _rendered_workloads()
    kinds = {name.split(":")[0] for name, _ in workloads}
    assert kinds == {"operator", "chart"} and len(workloads) >= 10
    for name, obj in workloads:
        pod = _pod_spec(obj)
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"), (
            name
        )
        assert not any("hostPath" in v for v in pod.get("volumes") or []), name
        pod_sc = pod.get("securityContext") or {}
        assert (pod_sc.get("seccompProfile") or {}).get("type") == "RuntimeDefault", name
        for c in pod.get("initContainers", []) + pod["containers"]:
            sc = c.get("securityContext") or {}
            where = f"{name}/{c['name']}"
            assert sc.get("allowPrivilegeEscalation") is False, where
            assert not sc.get("privileged"), where
            assert sc.get("capabilities", {}).get("drop") == ["ALL"], where
            assert not sc.get("capabilities", {}).get("add"), where
            assert sc.get("readOnlyRootFilesystem") is True, where
            non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
            uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
            assert non_root is True and uid not in (None, 0), where
            writable = [m["mountPath"] for m in c.get("volumeMounts", []) if not m.get("readOnly")]
            for env in c.get("env", []):
                if env["name"] in PATH_VARS:
                    assert any(
                        env["value"] == w or env["value"].startswith(w.rstrip("/") + "/")
                        for w in writable
                    ), (
                        f"{where}: {env['name']}={env['value']} is "
                        f"not on a writable mount {writable}"
                    )


def test_workload_pods_get_no_api_credentials():
    """Only the operator talks to the Kubernetes API; server and generator pods get no token."""
    for name, obj in _rendered_workloads():
        if name.startswith("operator:"):
            assert _pod_spec(obj).get("automountServiceAccountToken") is False, name


def test_generator_writes_only_to_the_output_volume_and_tmp():
    # The preflight writes nothing but /tmp; the model download Job writes the models volume.
    writable = {"generator": ["output", "tmp"], "preflight": ["tmp"], "download": ["model", "tmp"]}
    for name, obj in _rendered_workloads():
        if obj["kind"] != "Job":
            continue
        kind = next(k for k in writable if name.endswith(k))
        mounts = _pod_spec(obj)["containers"][0]["volumeMounts"]
        assert sorted(m["name"] for m in mounts if not m.get("readOnly")) == writable[kind], name


# ---- the Hugging Face token --------------------------------------------------------------------


def test_the_token_is_only_a_secret_reference_in_what_the_operator_renders():
    job = _job_variants()[2]
    objs = render_all(job["metadata"]["name"], "ns", job["spec"], OperatorSettings())
    refs = []
    for obj in objs:
        for c in _pod_spec(obj)["containers"] if obj["kind"] in WORKLOADS else []:
            for env in c.get("env", []):
                if env["name"] == "HF_TOKEN":
                    assert "value" not in env
                    refs.append(env["valueFrom"]["secretKeyRef"])
    assert refs and all(r == {"name": "hf", "key": "token"} for r in refs)
    # No field takes a token inline: the spec refuses one.
    bad = copy.deepcopy(job)
    bad["spec"]["model"]["hfToken"] = TOKEN
    with pytest.raises(SpecError) as err:
        parse_job(bad)
    assert "spec.model.hfToken: unknown field" in str(err.value)
    assert TOKEN not in str(err.value)


def _everything_in_the_emulator(emu) -> str:
    def dump():
        out = []
        for (resource, _, _), obj in list(emu.emulator.objects.items()):
            if resource.plural == "secrets":
                continue
            out += [
                json.dumps(
                    getattr(v, "raw", v),
                    default=lambda o: dict(o) if hasattr(o, "keys") else str(o),
                )
                for v in obj.history
                if v is not None
            ]
        return "\n".join(out)

    return emu.call(dump)


def test_the_token_never_reaches_status_configmaps_events_or_logs(tmp_path):
    """A whole job lifecycle with a token Secret in the namespace: the value appears nowhere but
    in the Secret — not in any version of any object (status, ConfigMaps, events, children),
    not in the operator's log."""
    (tmp_path / "e").mkdir()
    emu = FlakyEmulatorThread(tmp_path / "e", fail_rate=0.0, seed=0).start()
    try:
        cluster = Cluster(emu, "drafters")
        emu.http.post(
            "/api/v1/namespaces/drafters/secrets",
            json={
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "hf", "namespace": "drafters"},
                "stringData": {"token": TOKEN},
            },
        ).raise_for_status()
        job = example_job("drafters")
        job["spec"]["model"]["hfTokenSecret"] = {"name": "hf", "key": "token"}
        job["spec"]["datasets"] = job["spec"]["datasets"][:1]
        with running_operator() as runner:
            cluster.apply(job)
            wait_for(lambda: cluster.deployment("kimi-server-0"), "the server")
            cluster.server_ready("kimi")
            wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator")
            cluster.finish_generator("kimi", succeeded=False, message="out of retries")
            cluster.wait_phase("kimi", "Failed")
        stored = _everything_in_the_emulator(emu)
        assert "secretKeyRef" in stored  # the reference travelled; the value did not
        assert TOKEN not in stored
        assert TOKEN not in runner.output
        secret_reads = [
            r
            for r in emu.requests()
            if r["plural"] == "secrets" and r["agent"].startswith(OPERATOR_AGENTS)
        ]
        assert secret_reads == []  # the operator never even reads Secrets
    finally:
        emu.stop()


# RBAC (exactly what the operator uses, in every mode, enforced as a real API server would):
# tests/operator/test_rbac_modes.py.


# ---- documents parsed safely -----------------------------------------------------------------


def test_yaml_tags_that_run_code_are_refused(tmp_path):
    canary = tmp_path / "pwned"
    job = tmp_path / "job.yaml"
    job.write_text(f"""apiVersion: draftgen.io/v1alpha1
kind: GenerationJob
metadata: {{name: x}}
spec: !!python/object/apply:os.system ["touch {canary}"]
""")
    with pytest.raises(SpecError) as err:
        load_job(job)
    assert "not valid YAML" in str(err.value)
    assert not canary.exists()


UNSAFE = re.compile(
    r"yaml\.(load|unsafe_load|full_load|load_all)\(|\beval\(|\bexec\(|"
    r"pickle\.loads?\(|marshal\.loads?\(|shell=True"
)


def test_no_unsafe_parsing_in_the_code():
    """Untrusted bytes (job files, dataset rows, server answers, CRs) only reach safe parsers."""
    offenders = []
    for package in ("draftgen", "generator", "operator"):
        for path in (REPO / package).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if UNSAFE.search(line) and "safe_load" not in line:
                    offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# ---- paths stay on their volumes -------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("source", "../secrets.jsonl"),
        ("source", "data/../../etc/passwd"),
        ("source", "file://../x.jsonl"),
        ("source", "s3://bucket/x.jsonl"),
        ("source", "https://example.com/x.jsonl"),
        ("path", "/etc"),
        ("path", "../elsewhere"),
        ("path", "runs/../../x"),
        ("name", "../up"),
        ("name", "a/b"),
    ],
)
def test_paths_that_leave_their_volume_are_refused(field, value):
    job = copy.deepcopy(_job_variants()[0])
    if field == "path":
        job["spec"]["output"]["path"] = value
    else:
        job["spec"]["datasets"][0][field] = value
    with pytest.raises(SpecError) as err:
        parse_job(job)
    assert value in str(err.value) or field in str(err.value)


def _confinement_job(tmp_path: Path, source: str) -> Path:
    from .gen_run import write_job

    return write_job(
        tmp_path / "jobdir",
        tmp_path / "no-model",
        [{"name": "d", "source": source, "format": "prompt"}],
    )


@pytest.mark.parametrize("how", ["absolute", "symlink", "symlinked-dir"])
def test_sources_may_not_leave_the_inputs_volume_at_run_time(tmp_path, how):
    """`--inputs` (what the operator passes in a cluster) confines every source file to that
    volume, also through symlinks; the generator refuses to start (exit 2) naming the dataset."""
    import subprocess

    inputs, secret = tmp_path / "inputs", tmp_path / "elsewhere"
    inputs.mkdir()
    secret.mkdir()
    (secret / "private.jsonl").write_text('{"prompt": "the container\'s own files"}\n')
    (tmp_path / "jobdir").mkdir()
    source = {
        "absolute": str(secret / "private.jsonl"),
        "symlink": "link.jsonl",
        "symlinked-dir": "linked",
    }[how]
    if how == "symlink":
        (inputs / "link.jsonl").symlink_to(secret / "private.jsonl")
    if how == "symlinked-dir":
        (inputs / "linked").symlink_to(secret, target_is_directory=True)
    job = _confinement_job(tmp_path, source)
    done = subprocess.run(
        [*generate_args(job, "http://127.0.0.1:9", tmp_path / "out"), "--inputs", str(inputs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "spec.datasets[d].source" in done.stderr and "outside the inputs volume" in done.stderr
    assert not (tmp_path / "out" / "d").exists()
