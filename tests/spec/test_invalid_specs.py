"""Every refused spec names the field, the rule and the fix."""

from __future__ import annotations

import copy

import pytest

from draftgen.spec import SpecError, parse_job
from tests.jobs import job_document

BASE = job_document(
    "job",
    model={"weights": "/models/m"},
    datasets=[{"name": "chat", "source": "chat.jsonl", "format": "messages"}],
)


def with_(path: str, value):
    """A copy of BASE with one dotted path set (`spec.server.replicas`)."""
    doc = copy.deepcopy(BASE)
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    last = parts[-1]
    if last.isdigit():
        node[int(last)] = value
    elif value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return doc


_DELETE = object()
HICACHE_300 = {
    "tensorParallelSize": 8,
    "hostMemoryGB": 449,
    "hierarchicalCache": {"enabled": True, "sizeGBPerRank": 300},
}

# (document, the field the message must name, words the message must contain)
CASES = [
    (with_("spec.model", _DELETE), "spec.model", ["Field required", "add it"]),
    (with_("spec.datasets", []), "spec.datasets", ["at least 1"]),
    (
        with_("spec.server", {"tensorParallelSize": "eight"}),
        "spec.server.tensorParallelSize",
        ["whole number"],
    ),
    (
        with_("spec.server", {"tensorParallelSize": 0}),
        "spec.server.tensorParallelSize",
        ["greater than or equal to 1"],
    ),
    (
        with_("spec.server", {"memFractionStatic": 1.2}),
        "spec.server.memFractionStatic",
        ["less than 1"],
    ),
    (
        with_("spec.server", {"scheduleConservativeness": 0}),
        "spec.server.scheduleConservativeness",
        ["greater than 0"],
    ),
    (
        with_("spec.server", {"scheduleConservativeness": 2.5}),
        "spec.server.scheduleConservativeness",
        ["less than or equal to 2"],
    ),
    (
        with_("spec.server", {"kvCacheDtype": "fp8_e4m3"}),
        "kvCacheDtype",
        ["lossy", "allowLossyKVCache: true"],
    ),
    (with_("spec.server", {"kvCacheDtype": "int3"}), "spec.server.kvCacheDtype", ["bf16"]),
    (
        with_("spec.server", HICACHE_300),
        "hierarchicalCache.sizeGBPerRank",
        [
            "300 GB per rank × 8 ranks = 2400 GB",
            "449 GB host",
            "per rank, not in total",
            "at most 49",
        ],
    ),
    (
        with_("spec.server", {"hierarchicalCache": {"enabled": True, "sizeGBPerRank": 48}}),
        "hostMemoryGB",
        ["required", "server.hostMemoryGB"],
    ),
    (
        with_("spec.server", {"hierarchicalCache": {"enabled": True}}),
        "hierarchicalCache.sizeGBPerRank",
        ["required"],
    ),
    (
        with_("spec.server", {"tensorParallelSize": 8, "gpusPerReplica": 4}),
        "gpusPerReplica",
        ["cannot hold tensorParallelSize 8"],
    ),
    (with_("spec.server", {"extraArgs": ["--tp-size", "4"]}), "extraArgs", ["tensorParallelSize"]),
    (with_("spec.server", {"shmSize": "lots"}), "spec.server.shmSize", ["pattern"]),
    (with_("spec.server", {"hiCache": True}), "spec.server.hiCache", ["unknown field"]),
    (
        with_("spec.datasets.0", {"name": "a/b", "source": "x.jsonl", "format": "prompt"}),
        "spec.datasets[0](a/b).name",
        ["pattern"],
    ),
    (
        with_("spec.datasets.0", {"name": "Chat", "source": "x.jsonl", "format": "prompt"}),
        "spec.datasets[0](Chat).name",
        ["pattern"],
    ),
    (
        with_("spec.datasets.0", {"name": "x", "source": "../../etc/passwd", "format": "prompt"}),
        "spec.datasets[0](x).source",
        ["`..`"],
    ),
    (
        with_("spec.datasets.0", {"name": "x", "source": "s3://b/k", "format": "prompt"}),
        "spec.datasets[0](x).source",
        ["file://"],
    ),
    (
        with_("spec.datasets.0", {"name": "x", "source": "x.jsonl", "format": "csv"}),
        "spec.datasets[0](x).format",
        ["pretokenized"],
    ),
    (
        with_("spec.datasets.0", {"name": "x", "source": "x", "format": "prompt", "turns": "all"}),
        "spec.datasets[0](x)",
        ["turns", "turns: last"],
    ),
    (
        with_(
            "spec.datasets.0",
            {"name": "x", "source": "x", "format": "prompt", "budget": {"completionTokens": 0}},
        ),
        "spec.datasets[0](x).budget.completionTokens",
        ["greater than or equal to 1"],
    ),
    (
        with_(
            "spec.datasets.0",
            {"name": "x", "source": "x", "format": "prompt", "budget": {"tokens": 5}},
        ),
        "spec.datasets[0](x).budget.tokens",
        ["unknown field"],
    ),
    (
        with_(
            "spec.datasets",
            [
                {"name": "x", "source": "a", "format": "prompt"},
                {"name": "x", "source": "b", "format": "prompt"},
            ],
        ),
        "spec",
        ["'x' is used twice", "unique"],
    ),
    (
        with_("spec.sampling", {"maxNewTokens": 0}),
        "spec.sampling.maxNewTokens",
        ["greater than or equal to 1"],
    ),
    (
        with_("spec.sampling", {"temperature": -1}),
        "spec.sampling.temperature",
        ["greater than or equal to 0"],
    ),
    (
        with_("spec.generator", {"concurrency": {"mode": "fixed"}}),
        "spec.generator.concurrency",
        ["maxRequests", "mode: auto"],
    ),
    (
        with_("spec.generator", {"onBudgetMet": "stop"}),
        "spec.generator.onBudgetMet",
        ["'finish' or 'abort'"],
    ),
    (with_("spec.output", {"path": "../../elsewhere"}), "spec.output.path", ["`..`"]),
    (with_("spec.output", {"path": "/abs"}), "spec.output.path", ["relative"]),
    (with_("metadata.name", "My_Job"), "metadata.name", ["DNS label"]),
    (with_("metadata.name", "a" * 41), "metadata.name", ["at most 40"]),
    (with_("spec.model", {"weights": "hf://kimi"}), "spec.model.weights", ["hf://ORG/NAME"]),
    (
        with_("spec.ttlSecondsAfterFinished", -5),
        "spec.ttlSecondsAfterFinished",
        ["greater than or equal to 0"],
    ),
    (with_("apiVersion", "draftgen.io/v1"), "apiVersion", ["v1alpha1"]),
]


@pytest.mark.parametrize("doc,field,words", CASES, ids=[c[1] + ":" + c[2][0] for c in CASES])
def test_invalid_spec_is_refused_naming_field_and_fix(doc, field, words):
    with pytest.raises(SpecError) as info:
        parse_job(doc)
    text = str(info.value)
    assert field in text, text
    for word in words:
        assert word in text, text


def test_all_problems_reported_at_once():
    doc = with_("spec.server", {"tensorParallelSize": 0, "memFractionStatic": 2})
    with pytest.raises(SpecError) as info:
        parse_job(doc)
    assert len(info.value.problems) == 2


def test_base_document_is_valid():
    assert parse_job(BASE).spec.datasets[0].name == "chat"


def test_not_a_mapping_is_refused():
    with pytest.raises(SpecError, match="expected a mapping"):
        parse_job(["not", "a", "job"])


def test_load_job_reports_yaml_errors(tmp_path):
    from draftgen.spec import load_job

    bad = tmp_path / "job.yaml"
    bad.write_text("spec: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_job(bad)
    missing = tmp_path / "nope.yaml"
    with pytest.raises(SpecError, match="cannot read"):
        load_job(missing)
