"""The chart's values examples (charts/draftgen/examples/): each renders, every object validates
strictly, and the jobs they declare are the repository's examples, not drifting copies."""

from __future__ import annotations

import pytest
import yaml

from .rendering import CHART, REPO, of_kind, render, validate

EXAMPLES = sorted((CHART / "examples").glob("*.yaml"))


def test_there_is_a_kimi_example():
    assert CHART / "examples" / "kimi-k2.5.yaml" in EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_example_renders_and_validates(path):
    values = yaml.safe_load(path.read_text())
    docs = render(values, name="draftgen", namespace="draftgen")
    for doc in docs:
        validate(doc)
    for declared, job in zip(values["generationJobs"], of_kind(docs, "GenerationJob"), strict=True):
        source = yaml.safe_load((REPO / "examples" / path.name).read_text())
        assert declared["spec"] == source["spec"] == job["spec"]
        # The operator serves the job's namespace, with a Role there and no cluster-wide binding.
        namespace = job["metadata"]["namespace"]
        assert namespace in {r["metadata"]["namespace"] for r in of_kind(docs, "Role")}
        assert of_kind(docs, "ClusterRoleBinding") == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_example_lints_clean(path):
    import helm_python as helm

    values = yaml.safe_load(path.read_text())
    report = helm.lint(CHART, values, strict=True, namespace="draftgen", kube_version="v1.30.0")
    assert [m for m in report["messages"] if m["severity"] >= 2] == [] and report["errors"] == []


def _notes(values: dict) -> str:
    import helm_python as helm

    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(values, name="dg", namespace="draftgen")
    return next(v for k, v in manifests.items() if k.endswith("NOTES.txt"))


def test_install_notes_say_the_default_image_is_unpublished_and_what_is_served():
    """Issue 30, item 12: `helm install` with the default image warns that it cannot be pulled
    and how to fix it; with an image of your own it does not."""
    notes = _notes({})
    assert "ghcr.io/draftgen/draftgen:0.1.0 has not been published yet" in notes
    assert "--set image.repository=REGISTRY/draftgen" in notes
    assert "serves namespace(s) draftgen only" in notes
    own = _notes({"image": {"repository": "registry.example.com/ml/draftgen"}})
    assert "has not been published" not in own
    assert "serves every namespace" in _notes({"operator": {"clusterWide": True}})
