"""The CRD is generated from the typed spec, and what the spec accepts the CRD accepts."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from draftgen.crd import crd, crd_yaml, openapi_schema


@pytest.mark.parametrize(
    "path", ["crds/generationjob.yaml", "charts/draftgen/crds/generationjob.yaml"]
)
def test_committed_crd_matches_the_model(repo, path):
    committed = (repo / path).read_text()
    assert committed == crd_yaml(), f"{path} is stale: run `make crd`"


def _walk(node, path="$"):
    yield path, node
    if isinstance(node, dict):
        for key, value in node.get("properties", {}).items():
            yield from _walk(value, f"{path}.{key}")
        if "items" in node:
            yield from _walk(node["items"], f"{path}[]")


def test_schema_is_structural():
    """Kubernetes refuses non-structural schemas: every node typed, no refs or unions."""
    for path, node in _walk(openapi_schema()["properties"]["spec"]):
        if node.get("x-kubernetes-int-or-string"):
            # the one union a structural schema allows, exactly in this shape
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert "type" not in node, path
            continue
        assert "type" in node, path
        assert not {"$ref", "anyOf", "oneOf", "allOf", "$defs"} & node.keys(), path
        assert not ("properties" in node and "additionalProperties" in node), path


def test_every_spec_field_has_a_description():
    missing = [
        p
        for p, node in _walk(openapi_schema()["properties"]["spec"])
        if not node.get("description") and not p.endswith("[]")
    ]
    assert missing == []


def test_names_and_printer_columns():
    doc = crd()
    assert doc["metadata"]["name"] == "generationjobs.draftgen.io"
    names = doc["spec"]["names"]
    assert (names["kind"], names["plural"], names["shortNames"]) == (
        "GenerationJob",
        "generationjobs",
        ["gj"],
    )
    version = doc["spec"]["versions"][0]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Phase", "Progress", "Model", "Tok/s", "ETA", "Age"]


@pytest.mark.parametrize("name", ["kimi-k2.5.yaml", "demo.yaml"])
def test_examples_validate_against_crd_schema(examples, name):
    doc = yaml.safe_load((examples / name).read_text())
    jsonschema.Draft4Validator(openapi_schema()).validate(doc)


def test_crd_schema_refuses_what_the_model_refuses(examples):
    doc = yaml.safe_load((examples / "kimi-k2.5.yaml").read_text())
    doc["spec"]["server"]["kvCacheDtype"] = "int3"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(openapi_schema()).validate(doc)
    doc["spec"]["server"]["kvCacheDtype"] = "bf16"
    doc["spec"]["datasets"][0]["name"] = "../etc"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(openapi_schema()).validate(doc)


def test_cli_prints_the_crd(capsys):
    from draftgen.cli import main

    assert main(["crd"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["kind"] == "CustomResourceDefinition"
