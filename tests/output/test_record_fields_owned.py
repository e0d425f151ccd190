"""No module outside draftgen/output reads a field of a record or a reject by string key
(`rec["output_ids"]`, `rec.get("completion_tokens")`): they go through the types in
draftgen/output, so a field renamed or added is one change there, and a reader cannot drift."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from draftgen.output.record import Meta, Record, Reject

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("generator", "operator", "draftgen")
OWNER = ROOT / "draftgen" / "output"

GENERIC = {"id", "dataset", "meta", "turn", "reason", "detail", "server", "sampling", "sample"}
GENERIC |= {"attempts", "read_from"}
"""Names too common to mean a record (a tool call's `id`, a Kubernetes condition's `reason`,
a spec's `sampling`): the scan would only find other things' fields."""

FIELDS = {f.name for cls in (Record, Meta, Reject) for f in dataclasses.fields(cls)} - GENERIC

NOT_A_RECORD = {
    "generator/sglang/client.py": "SGLang's /generate answer (`output_ids`, `meta_info`)",
    "generator/rows/formats.py": "input rows: a `pretokenized` row's `input_ids`",
    "generator/telemetry/progress.py": "its own progress log line",
    "draftgen/contract/metrics.py": "the generator's /metrics page, counted per dataset",
    "draftgen/top/readings.py": "SGLang's /metrics page: `dp_rank` is a metric label there",
}
"""Modules that read dicts which share a name with a record field but are something else."""


def _string_key_reads(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            key = node.args[0].value
        if isinstance(key, str) and key in FIELDS:
            found.append((node.lineno, key))
    return found


def _modules() -> list[Path]:
    out = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if OWNER in path.parents or path.is_symlink():
                continue
            out.append(path)
    return out


def test_no_record_field_is_read_by_string_key_outside_the_output_package():
    offenders = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        if rel in NOT_A_RECORD:
            continue
        for lineno, key in _string_key_reads(ast.parse(path.read_text(), rel)):
            offenders.append(f"{rel}:{lineno}: [{key!r}]")
    assert not offenders, (
        "read these through draftgen.output's Record/Reject/manifests:\n" + "\n".join(offenders)
    )


def test_the_scan_finds_what_it_forbids():
    tree = ast.parse('r["output_ids"]; r.get("completion_tokens", 0); r["something_else"]')
    assert [k for _, k in _string_key_reads(tree)] == ["output_ids", "completion_tokens"]


def test_every_module_it_excuses_exists():
    assert all((ROOT / rel).is_file() for rel in NOT_A_RECORD)
