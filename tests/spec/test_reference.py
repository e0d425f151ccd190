"""docs/reference.md is generated from the spec and current; `draftgen explain` prints one field."""

from __future__ import annotations

from pathlib import Path

from draftgen.cli import main
from draftgen.spec.reference import fields, markdown

REPO = Path(__file__).resolve().parents[2]


def test_committed_reference_matches_the_spec() -> None:
    committed = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    assert committed == markdown(), "docs/reference.md is stale: run `make crd`"


def test_every_field_is_documented_with_a_type() -> None:
    docs = fields()
    paths = {d.path for d in docs}
    assert {"spec.server.hierarchicalCache.sizeGBPerRank", "spec.datasets[].budget"} <= paths
    assert all(d.description and d.type for d in docs), [d.path for d in docs if not d.description]
    by_path = {d.path: d for d in docs}
    size = by_path["spec.server.hierarchicalCache.sizeGBPerRank"]
    assert size.units == "GB (10⁹ bytes) per tensor-parallel rank" and "≥ 1" in size.rules
    assert by_path["spec.sampling.maxNewTokens"].default == "`16384`"
    assert by_path["spec.server.kvCacheDtype"].type.startswith("one of `auto`")
    assert by_path["spec.model.weights"].example  # from examples/kimi-k2.5.yaml


def test_explain_prints_one_field_offline(capsys) -> None:
    assert main(["explain", "spec.server.hierarchicalCache"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("spec.server.hierarchicalCache  (object)")
    assert "sizeGBPerRank" in out and "per tensor-parallel rank" in out
    assert main(["explain", "server.hierarchicalCache.sizeGBPerRank"]) == 0
    assert "units:   GB (10⁹ bytes) per tensor-parallel rank" in capsys.readouterr().out


def test_explain_refuses_an_unknown_field_with_the_closest(capsys) -> None:
    assert main(["explain", "spec.sampling.maxNewToken"]) == 2
    assert "did you mean `spec.sampling.maxNewTokens`?" in capsys.readouterr().err
