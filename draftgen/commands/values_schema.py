"""The chart's `values.schema.json` node for `generationJobs[].spec`: the CRD's own schema for
`spec`, turned into JSON Schema for Helm (never hand-written), so `helm install`/`template`
refuse what the CRD and the operator refuse, e.g. `server: {replica: 2}` (an unknown field:
the API server would prune it silently) or `completionTokens: "10M"` (a string)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from draftgen.crd import openapi_schema

SPEC_NODE = ("properties", "generationJobs", "items", "properties", "spec")


def _json_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if out.get(exclusive) is True:  # OpenAPI 3.0's boolean form; JSON Schema's is the number
            out[exclusive] = out.pop(bound)
        elif exclusive in out:
            del out[exclusive]
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [out["type"], "null"]
    # Unknown keys are refused in values (a typo would otherwise be pruned by the API server),
    # except where the CRD keeps them (resources, nodeSelector, ...).
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def spec_schema() -> dict[str, Any]:
    """JSON Schema of a GenerationJob spec, from the CRD's openAPIV3Schema."""
    spec = copy.deepcopy(openapi_schema()["properties"]["spec"])
    node = _json_schema(spec)
    node["description"] = (
        "A GenerationJob spec (generated from the CRD's schema by `make crd`; see "
        "docs/reference.md)."
    )
    return node


def with_spec_schema(values_schema: dict[str, Any]) -> dict[str, Any]:
    """`values_schema` with its generationJobs[].spec node replaced by the generated one."""
    out = copy.deepcopy(values_schema)
    node = out
    for key in SPEC_NODE[:-1]:
        node = node[key]
    node[SPEC_NODE[-1]] = spec_schema()
    return out


def write(path: Path) -> None:
    current = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(with_spec_schema(current), indent=2) + "\n", encoding="utf-8")
