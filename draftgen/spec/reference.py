"""The field reference of the GenerationJob spec, generated from the typed models: every field
with its type, default, units, rules and an example (from examples/ when they are at hand).

`docs/reference.md` is `markdown()` (`make crd` writes it; a test fails when it is stale) and
`draftgen explain spec.server.hierarchicalCache` prints `explain()` of one field, offline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

from .job import GenerationJobSpec
from .json_schema import inline_refs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = ("kimi-k2.5.yaml", "demo.yaml")


@dataclass(frozen=True)
class FieldDoc:
    path: str
    """`spec.datasets[].budget.completionTokens`"""
    type: str
    default: str
    units: str
    rules: str
    description: str
    example: str


def _schema() -> dict[str, Any]:
    raw = GenerationJobSpec.model_json_schema(by_alias=True)
    return inline_refs({k: v for k, v in raw.items() if k != "$defs"}, raw.get("$defs", {}))


def _options(node: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The node without `X | None`, and whether null is allowed."""
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        if len(options) == 1:
            merged = {**options[0], **{k: v for k, v in node.items() if k != "anyOf"}}
            return merged, len(options) < len(node["anyOf"])
    return node, False


def _type(node: dict[str, Any]) -> str:
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if node.get("x-kubernetes-int-or-string"):
        return "integer or quantity (`10M`, `1.5e7`, `250k`)"
    kind = node.get("type", "object")
    if kind == "array":
        return f"list of {_type(_options(node.get('items', {}))[0])}"
    if kind == "object" and "properties" not in node:
        values = node.get("additionalProperties")
        return f"map of {_type(values)}" if isinstance(values, dict) and values else "object"
    return {"integer": "integer", "number": "number", "boolean": "boolean"}.get(kind, kind)


_RULES = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("pattern", "matches `{}`"),
)


def _rules(node: dict[str, Any], nullable: bool, required: bool) -> str:
    out = ["required"] if required else []
    out += [
        text.format(node[key])
        for key, text in _RULES
        # a quantity's pattern is its type's spelling, said by the type column
        if key in node and not (key == "pattern" and node.get("x-kubernetes-int-or-string"))
    ]
    if nullable and not required:
        out.append("may be null (unset)")
    return "; ".join(out)


def _units(name: str) -> str:
    if name.endswith("TokensPerSecond"):
        return "tokens per second"
    if name.endswith("GBPerRank"):
        return "GB (10⁹ bytes) per tensor-parallel rank"
    if name.endswith("GB"):
        return "GB (10⁹ bytes)"
    if name.endswith("GiB"):
        return "GiB (2³⁰ bytes)"
    if name.endswith("Seconds"):
        return "seconds"
    if name.endswith(("Tokens", "TokenIds")) or name in ("contextLength", "chunkedPrefillSize"):
        return "token ids" if name.endswith("TokenIds") else "tokens"
    if name.startswith("memFraction"):
        return "fraction of each GPU's memory"
    return ""


def _default(node: dict[str, Any]) -> str:
    if "default" not in node:
        return ""
    value = node["default"]
    if value is None:
        return "unset"
    if value in ({}, []):
        return "`{}`" if value == {} else "`[]`"
    return f"`{json.dumps(value)}`"


def _examples() -> list[dict[str, Any]]:
    out = []
    for name in EXAMPLE_FILES:
        path = EXAMPLES / name
        if path.exists():
            out.append(yaml.safe_load(path.read_text(encoding="utf-8")).get("spec", {}))
    return out


def _example_at(spec: Any, parts: list[str]) -> Any:
    node = spec
    for part in parts:
        if isinstance(node, list):
            node = next((n for n in node if isinstance(n, dict) and part in n), {})
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _example(parts: list[str], examples: list[dict[str, Any]]) -> str:
    for spec in examples:
        value = _example_at(spec, parts)
        if (value is not None and not isinstance(value, (dict, list))) or value == []:
            return f"`{json.dumps(value)}`"
        if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
            return f"`{json.dumps(value)}`"
    return ""


def fields() -> list[FieldDoc]:
    """Every field below `spec`, depth first in declaration order."""
    examples = _examples()
    out: list[FieldDoc] = []

    def walk(node: dict[str, Any], path: str, parts: list[str]) -> None:
        required = set(node.get("required", []))
        for name, raw in node.get("properties", {}).items():
            child, nullable = _options(raw)
            here = f"{path}.{name}"
            out.append(
                FieldDoc(
                    path=here,
                    type=_type(child),
                    default=_default(raw if "default" in raw else child),
                    units=_units(name),
                    rules=_rules(child, nullable, name in required),
                    description=" ".join((raw.get("description") or "").split()),
                    example=_example([*parts, name], examples),
                )
            )
            if "properties" in child:
                walk(child, here, [*parts, name])
            elif child.get("type") == "array":
                items = _options(child.get("items", {}))[0]
                if "properties" in items:
                    walk(items, here + "[]", [*parts, name])

    walk(_schema(), "spec", [])
    return out


class UnknownField(DraftgenError, KeyError):
    """`explain` was given a path the spec does not have; the message names the closest."""

    exit_code = ExitCode.INVALID
    fix = "see the field names with `draftgen explain --reference`"

    def report(self) -> list[str]:
        return [str(self.args[0])]  # KeyError's str() would quote it


def _normal(path: str) -> str:
    path = path.strip().removeprefix("GenerationJob.")
    path = path if path.startswith("spec") else f"spec.{path}"
    return path.replace("[]", "").replace("[0]", "")


def explain(path: str) -> str:
    """One field's documentation (and its children's names), or `UnknownField`."""
    import difflib

    docs = fields()
    by_path = {d.path.replace("[]", ""): d for d in docs}
    key = _normal(path)
    if key == "spec":
        lines = ["spec: the desired state of a GenerationJob", "", "fields:"]
        lines += [f"  {d.path.removeprefix('spec.')}" for d in docs if d.path.count(".") == 1]
        return "\n".join(lines) + "\n"
    doc = by_path.get(key)
    if doc is None:
        close = difflib.get_close_matches(key, list(by_path), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else "; `draftgen explain spec` lists them"
        raise UnknownField(f"{path}: no such field in the GenerationJob spec{hint}")
    lines = [f"{doc.path}  ({doc.type})", "", doc.description or "(no description)", ""]
    for label, value in (
        ("default", doc.default),
        ("units", doc.units),
        ("rules", doc.rules),
        ("example", doc.example),
    ):
        if value:
            lines.append(f"{label + ':':<9}{value.replace('`', '')}")
    children = [
        d for d in docs if d.path.startswith(doc.path + ".") or d.path.startswith(doc.path + "[].")
    ]
    direct = [
        d for d in children if "." not in d.path.removeprefix(doc.path).lstrip("[]").strip(".")
    ]
    if direct:
        lines += ["", "fields:"]
        width = max(len(d.path.rsplit(".", 1)[-1]) for d in direct)
        for d in direct:
            first = d.description.split(". ")[0].rstrip(".")
            lines.append(f"  {d.path.rsplit('.', 1)[-1]:<{width}}  {d.type}: {first}")
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """docs/reference.md."""
    from draftgen.contract.generator_cli import ExitCode

    lines = [
        "# GenerationJob reference",
        "",
        "<!-- Generated from the typed spec (draftgen/spec/) by `make crd`; do not edit. "
        "tests/spec/test_reference.py fails when it is stale. -->",
        "",
        "Every field of `spec`, with its type, default, units, rules and an example (from "
        "`examples/kimi-k2.5.yaml` or `examples/demo.yaml` where they set it). "
        "`draftgen explain spec.server.hierarchicalCache` prints one field offline; "
        "`draftgen validate` applies every rule below (and the cluster's: "
        "`spec.output.claimName`, `spec.inputs.claimName`, `spec.model.volume` for local "
        "weights). Relative paths (dataset sources, `model.weights`, `model.tokenizer`, "
        "`output.path`) resolve from the job file's directory in a local run and below the "
        "volumes' mount paths in a cluster.",
        "",
    ]
    sections: dict[str, list[FieldDoc]] = {}
    for doc in fields():
        top = doc.path.split(".")[1].removesuffix("[]")
        sections.setdefault(top, []).append(doc)
    for top, docs in sections.items():
        lines += [f"## spec.{top}", ""]
        for doc in docs:
            lines.append(f"### `{doc.path}`")
            lines.append("")
            lines.append(doc.description or "(no description)")
            lines.append("")
            lines.append("| type | default | units | rules | example |")
            lines.append("|---|---|---|---|---|")
            row = [doc.type, doc.default or "—", doc.units or "—", doc.rules or "—"]
            lines.append("| " + " | ".join(_cell(c) for c in [*row, doc.example or "—"]) + " |")
            lines.append("")
    lines += [
        "## Exit codes (every command)",
        "",
        "One table for `draftgen generate`, `validate`, `plan`, `export`, `stats` and "
        "`operator --render` (`draftgen.contract.generator_cli.ExitCode`). Argument errors "
        "are 2, like argparse's own.",
        "",
        "| code | meaning |",
        "|---|---|",
    ]
    lines += [f"| {int(code)} | {_cell(code.__doc__ or '')} |" for code in ExitCode]
    return "\n".join(lines) + "\n"
