"""generationJobs[].spec in values.schema.json is the CRD's own schema (generated, current), so
real Helm refuses a spec the CRD and the operator refuse instead of rendering it silently."""

from __future__ import annotations

import copy
import json

import helm_python as helm
import pytest
import yaml

from draftgen.commands.values_schema import with_spec_schema

from .rendering import CHART, REPO, of_kind, render

KIMI = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())["spec"]


def _job(**changes) -> dict:
    spec = copy.deepcopy(KIMI)
    for dotted, value in changes.items():
        node = spec
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return {"generationJobs": [{"name": "kimi", "spec": spec}]}


def test_committed_values_schema_has_the_crds_spec_schema() -> None:
    committed = json.loads((CHART / "values.schema.json").read_text())
    assert committed == with_spec_schema(committed), "stale: run `make crd`"


@pytest.mark.parametrize(
    "values, message",
    [
        (_job(server={"replica": 2}), "additional properties 'replica'"),
        (_job(datasets__0__budget={"completionTokens": "ten million"}), "completionTokens"),
        (_job(server__memFractionStatic=1.2), "memFractionStatic"),
        (_job(server__kvCacheDtype="int3"), "kvCacheDtype"),
    ],
    ids=["unknown-field", "not-a-quantity", "fraction", "enum"],
)
def test_helm_refuses_a_spec_the_crd_refuses(values, message) -> None:
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert message in str(err.value)


def test_a_valid_spec_renders_as_a_generationjob() -> None:
    (job,) = of_kind(render(_job()), "GenerationJob")
    assert job["spec"]["server"]["tensorParallelSize"] == KIMI["server"]["tensorParallelSize"]
