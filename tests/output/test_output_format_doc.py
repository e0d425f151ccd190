"""docs/output-format.md lists exactly the fields of the types in draftgen/output: a field added to
`Record`, `Meta`, `Reject` or a manifest without its line in the doc (or a doc line for a field
that is gone) fails here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from draftgen.output.manifest import VERSION_KEY, DatasetManifest, JobManifest
from draftgen.output.record import Meta, Record, Reject

DOC = (Path(__file__).resolve().parents[2] / "docs" / "output-format.md").read_text()


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.name != "read_from"}


def _section(title: str) -> str:
    return DOC.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _record_table() -> dict[str, str]:
    rows = re.findall(
        r"^\| `(\w+)` \| [^|]+ \| (.*) \|$", _section("A record (one line of a shard)"), re.M
    )
    return dict(rows)


def _braced_keys(text: str) -> set[str]:
    """The top-level `"key"` names of a `{...}` listing (nested `{...}` left out)."""
    depth, keys = 0, set()
    for token in re.finditer(r'[{}]|"(\w+)"', text):
        if token.group(0) == "{":
            depth += 1
        elif token.group(0) == "}":
            depth -= 1
        elif depth == 1:
            keys.add(token.group(1))
    return keys


def test_the_record_table_lists_the_record_fields():
    assert set(_record_table()) == _fields(Record)


def test_the_meta_row_lists_the_meta_fields():
    named = set(re.findall(r"`(\w+)`", _record_table()["meta"].split("(facts", 1)[0]))
    assert named == _fields(Meta)


def test_the_rejects_line_lists_the_reject_fields():
    line = next(x for x in _section("rejects.jsonl").splitlines() if x.startswith("`{"))
    assert _braced_keys(line) == _fields(Reject)


def test_the_manifest_lines_list_the_manifest_fields():
    section = _section("manifest.json (per dataset)").splitlines()
    dataset = next(x for x in section if x.startswith('`{"schemaVersion"'))
    job = next(x for x in section if x.startswith("The job manifest holds"))
    assert _braced_keys(dataset) == _fields(DatasetManifest) | {VERSION_KEY}
    assert _braced_keys(job.split("`", 1)[1]) == _fields(JobManifest) | {VERSION_KEY}
