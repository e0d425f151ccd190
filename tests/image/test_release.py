"""The release workflow (.github/workflows/release.yml), checked offline: it cannot run here.
It parses, runs on version tags, tests before it publishes, and pushes the image for both
architectures under exactly the tag the chart pulls by default, and the chart as an OCI artifact."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from .conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def _outputs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "release_versions.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_runs_on_version_tags_and_tests_before_publishing(workflow):
    on = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on` as true
    assert on["push"]["tags"] == ["v*.*.*"]
    assert workflow["jobs"]["publish"]["needs"] == "test"
    assert any("make test" in step.get("run", "") for step in _steps(workflow, "test"))


def test_pushes_both_architectures_under_the_chart_default_tag(workflow):
    chart = yaml.safe_load((REPO / "charts/draftgen/Chart.yaml").read_text())
    values = yaml.safe_load((REPO / "charts/draftgen/values.yaml").read_text())
    steps = _steps(workflow, "publish")
    [build] = [s for s in steps if s.get("uses", "").startswith("docker/build-push-action")]
    assert build["with"]["push"] is True
    assert set(build["with"]["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    # The tag is the script's `image` output; the script's output is the chart's default.
    [names] = [s for s in steps if s.get("id") == "v"]
    assert "release_versions.py" in names["run"] and "--github-output" in names["run"]
    assert build["with"]["tags"] == "${{ steps.v.outputs.image }}"
    out = dict(line.split("=", 1) for line in _outputs().stdout.splitlines())
    assert out["image"] == f"{values['image']['repository']}:{chart['appVersion']}"
    assert values["image"]["tag"] == ""  # empty: the chart pulls its appVersion


def test_pushes_the_chart_as_oci(workflow):
    run = " ".join(s.get("run", "") for s in _steps(workflow, "publish"))
    assert "helm package charts/draftgen" in run and "helm push" in run
    out = dict(line.split("=", 1) for line in _outputs().stdout.splitlines())
    assert out["chart_registry"].startswith("oci://ghcr.io/")


def test_a_tag_that_disagrees_with_the_chart_stops_the_release():
    chart = yaml.safe_load((REPO / "charts/draftgen/Chart.yaml").read_text())
    assert _outputs("--tag", f"v{chart['appVersion']}").returncode == 0
    wrong = _outputs("--tag", "v99.0.0")
    assert wrong.returncode == 1 and "appVersion" in wrong.stderr


def test_the_server_image_default_is_the_tested_sglang_release():
    """The SGLang image jobs default to is the release the tests run (scripts/setup_sglang.sh)."""
    import re

    from draftgen.spec.server import ServerSpec

    tested = re.search(
        r'^SGLANG_VERSION="([^"]+)"', (REPO / "scripts/setup_sglang.sh").read_text(), re.M
    ).group(1)
    default = ServerSpec.model_fields["image"].default
    assert default.startswith(f"lmsysorg/sglang:v{tested}")
    values = yaml.safe_load((REPO / "charts/draftgen/values.yaml").read_text())
    assert values["serverDefaults"]["image"] == default
