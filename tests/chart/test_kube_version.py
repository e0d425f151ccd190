"""The Kubernetes version the chart and docs promise is one where what the operator creates
works, and the docs' command for a job's children lists every kind it creates."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from draftgen.controller.render import render_all
from draftgen.controller.settings import OperatorSettings

from .rendering import CHART

REPO = Path(__file__).resolve().parents[2]

# Fields the operator's children rely on, and the first Kubernetes release that enables them by
# default (an earlier server accepts the field behind a feature gate, or drops it silently).
ON_BY_DEFAULT_FROM = {
    "podFailurePolicy": (1, 26),  # Job pod failure policy: beta, on by default in 1.26
}

# `kubectl get all` does not include ConfigMaps: a command that lists a job's children must
# name the kinds.
PLURALS = {
    "ConfigMap": "configmaps",
    "Deployment": "deployments",
    "Job": "jobs",
    "NetworkPolicy": "networkpolicies",
    "Service": "services",
}


def _children() -> list[dict]:
    raw = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    return render_all("kimi", "drafters", raw["spec"], OperatorSettings())


def _uses(obj: object, field: str) -> bool:
    if isinstance(obj, dict):
        return field in obj or any(_uses(v, field) for v in obj.values())
    if isinstance(obj, list):
        return any(_uses(v, field) for v in obj)
    return False


def _minimum() -> tuple[int, int]:
    kube_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"]
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)\.\d+(-0)?", kube_version)
    assert match, kube_version
    return int(match[1]), int(match[2])


def test_the_minimum_version_enables_every_field_the_children_use() -> None:
    needed = max(
        version
        for field, version in ON_BY_DEFAULT_FROM.items()
        if any(_uses(obj, field) for obj in _children())
    )
    assert _minimum() >= needed, f"Chart.yaml kubeVersion allows {_minimum()} < {needed}"


def test_the_docs_state_the_charts_minimum() -> None:
    major, minor = _minimum()
    install = (REPO / "docs" / "install.md").read_text()
    assert f"Kubernetes {major}.{minor} or later" in install
    stated = set(re.findall(r"Kubernetes (\d+\.\d+) or later", install))
    assert stated == {f"{major}.{minor}"}, stated


def test_commands_for_a_jobs_children_name_every_kind() -> None:
    kinds = {PLURALS[obj["kind"]] for obj in _children()}
    files = [*(REPO / "docs").glob("*.md"), REPO / "README.md", *(REPO / "operator").glob("*.py")]
    commands = [
        (path.name, cmd)
        for path in files
        for cmd in re.findall(r"kubectl get [^`\n]*-l draftgen\.io/job=[^`\n]*", path.read_text())
    ]
    assert commands, "no command that lists a job's children"
    for name, cmd in commands:
        listed = set(cmd.split()[2].split(","))
        assert kinds <= listed, f"{name}: `{cmd}` misses {sorted(kinds - listed)}"
