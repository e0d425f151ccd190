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
