"""The GenerationJob CRD, generated from the pydantic models (never edited by hand)."""

from __future__ import annotations

import json
from typing import Any

import yaml
from pydantic import BaseModel

from .spec import job as jobmod
from .spec.job import GenerationJobSpec
from .spec.json_schema import inline_refs
from .spec.status import GenerationJobStatus

PRINTER_COLUMNS = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Progress", "type": "string", "jsonPath": ".status.progress"},
    {"name": "Model", "type": "string", "jsonPath": ".status.model.progress"},
    {"name": "Tok/s", "type": "number", "jsonPath": ".status.throughputTokensPerSecond"},
    {"name": "ETA", "type": "string", "jsonPath": ".status.eta"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

_DROP = {"title", "default", "additionalProperties", "$defs", "discriminator"}


def _structural(node: dict[str, Any]) -> dict[str, Any]:
    """Turn one JSON-Schema node into a structural OpenAPI v3 node."""
    node = dict(node)
    description = node.get("description")
    default = node.get("default")

    # `X | None` → X, nullable
    any_of = node.pop("anyOf", None)
    if any_of is not None:
        options = [o for o in any_of if o.get("type") != "null"]
        nullable = len(options) < len(any_of)
        if len(options) == 1:
            merged = {**options[0], **{k: v for k, v in node.items() if k != "anyOf"}}
            node = merged
        else:
            raise ValueError(f"cannot express a union of {options} in a structural schema")
        if nullable:
            node["nullable"] = True

    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "enum" in node and "type" not in node:
        node["type"] = "string"

    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        if key in node and not isinstance(node[key], bool):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            node[bound] = node.pop(key)
            node[key] = True

    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties":
            out["properties"] = {name: _structural(sub) for name, sub in value.items()}
        elif key == "items":
            out["items"] = _structural(value)
        else:
            out[key] = value

    kind = out.get("type")
    if kind == "object" and "properties" not in out:
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("type") in (
            "string",
            "integer",
            "number",
            "boolean",
        ):
            out["additionalProperties"] = _structural(extra)
        else:
            out["x-kubernetes-preserve-unknown-fields"] = True
    if kind is None and "x-kubernetes-preserve-unknown-fields" not in out and "anyOf" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
        out["type"] = "object"
    if description is not None:
        text = " ".join(description.split())
        if default not in (None, [], {}) and not isinstance(default, dict):
            text += f" Default: {json.dumps(default)}."
        out["description"] = text
    return out


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    return _structural(inline_refs(raw, defs))


def openapi_schema() -> dict[str, Any]:
    """The `openAPIV3Schema` of the GenerationJob CRD."""
    return {
        "type": "object",
        "description": "A request to generate drafter training data from a target model.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _model_schema(GenerationJobSpec),
            "status": {
                **_model_schema(GenerationJobStatus),
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
    }


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition as a dictionary."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{jobmod.PLURAL}.{jobmod.GROUP}",
            "labels": {"app.kubernetes.io/part-of": "draftgen"},
        },
        "spec": {
            "group": jobmod.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": jobmod.KIND,
                "listKind": f"{jobmod.KIND}List",
                "plural": jobmod.PLURAL,
                "singular": jobmod.SINGULAR,
                "shortNames": list(jobmod.SHORT_NAMES),
                "categories": ["draftgen"],
            },
            "versions": [
                {
                    "name": jobmod.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS,
                    "schema": {"openAPIV3Schema": openapi_schema()},
                }
            ],
        },
    }


HEADER = "# Generated by `draftgen crd` from draftgen/spec; do not edit. `make crd` rewrites it.\n"


def crd_yaml() -> str:
    """The CRD as the YAML committed in `crds/` and the chart's `crds/`."""
    return HEADER + yaml.safe_dump(crd(), sort_keys=False, width=100, allow_unicode=True)
