"""The spec's JSON Schema with every `$ref` resolved in place: what the CRD and the field
reference are both generated from."""

from __future__ import annotations

import copy
from typing import Any


def inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """Resolve `$ref`s so the schema is self-contained, as Kubernetes requires."""
    if isinstance(node, list):
        return [inline_refs(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
        rest = {k: v for k, v in node.items() if k != "$ref"}
        target.update(rest)  # a field's own description wins over its class docstring
        return inline_refs(target, defs)
    return {k: inline_refs(v, defs) for k, v in node.items()}
