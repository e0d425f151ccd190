"""The generator's metric series are exactly the contract's definitions, carry the job's labels,
and docs/metrics.md is generated from the same definitions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from draftgen.contract import metrics, metrics_doc
from draftgen.generator.prompts.samples import Reject
from draftgen.generator.telemetry.metrics import GeneratorMetrics, job_labels
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget

REPO = Path(__file__).resolve().parents[2]
LABELS = {"generationjob": "kimi", "namespace": "llm"}


def _families(m: GeneratorMetrics) -> dict[str, tuple[str, tuple[str, ...]]]:
    out = {}
    for family in m.own.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        labels: tuple[str, ...] = ()
        for sample in family.samples:
            labels = tuple(k for k in sample.labels if k != "le")
            break
        out[name] = (family.type, labels)
    return out


def _page(m: GeneratorMetrics) -> list:
    return [
        s
        for family in text_string_to_metric_families(generate_latest(m.registry).decode())
        for s in family.samples
    ]


def test_the_generator_exposes_every_defined_series_with_its_type() -> None:
    got = _families(GeneratorMetrics())
    assert set(got) == {m.name for m in metrics.ALL}
    for m in metrics.ALL:
        assert got[m.name][0] == m.type, m.name


def test_the_labels_of_every_series_are_the_defined_ones() -> None:
    m = GeneratorMetrics()
    by_name = {}
    for collector in vars(m).values():
        if hasattr(collector, "_labelnames"):
            name = collector._name + ("_total" if collector._type == "counter" else "")
            by_name[name] = tuple(collector._labelnames)
    assert by_name == {d.name: d.labels for d in metrics.ALL}


def test_names_are_unique_and_in_the_draftgen_namespace() -> None:
    names = [m.name for m in metrics.ALL]
    assert len(names) == len(set(names))
    assert all(n.startswith("draftgen_") for n in names)


def test_every_served_series_names_its_generationjob_and_namespace() -> None:
    m = GeneratorMetrics(LABELS)
    m.start_from(Ledger("chat", Budget(completion_tokens=100)))
    m.completion_tokens_per_second.set(3.5)
    samples = _page(m)
    assert {s.name for s in samples} >= {
        "draftgen_rejects_total",
        "draftgen_completion_tokens_per_second",
        "draftgen_budget_completion_tokens",
    }
    assert all(
        s.labels.get("generationjob") == "kimi" and s.labels.get("namespace") == "llm"
        for s in samples
    )


def test_an_unknown_namespace_is_left_out_not_sent_empty() -> None:
    assert job_labels("local", None) == {"generationjob": "local"}
    samples = _page(GeneratorMetrics(job_labels("local", None)))
    assert samples and all("namespace" not in s.labels for s in samples)


def test_every_reject_reason_is_present_at_zero_from_the_start() -> None:
    m = GeneratorMetrics(LABELS)
    ledger = Ledger("chat", Budget(completion_tokens=100))
    ledger.add_reject("bad_tools")
    m.start_from(ledger)
    rejects = {
        s.labels["reason"]: s.value
        for s in _page(m)
        if s.name == metrics.REJECTS.name and s.labels["dataset"] == "chat"
    }
    assert rejects == {r.value: (1.0 if r == "bad_tools" else 0.0) for r in metrics.RejectReason}
    errors = {s.labels["kind"] for s in _page(m) if s.name == metrics.ERRORS.name}
    assert errors == {k.value for k in metrics.ErrorKind}


def test_a_reason_outside_the_enum_is_refused() -> None:
    with pytest.raises(ValueError, match="reject_typo"):
        Reject("chat", 0, None, "reject_typo", "")
    assert Reject("chat", 0, None, "bad_tools").reason is metrics.RejectReason.BAD_TOOLS


def _literal_reasons() -> set[tuple[str, str]]:
    """Every reason the generator's code spells as a literal: the first argument of
    `RowError(...)`, the reason argument of `Reject(...)` and `parse_json(...)`, and the first
    element of an unreadable row's `(reason, detail)` tuple."""
    found = set()
    for path in sorted((REPO / "generator").rglob("*.py")) + sorted(
        (REPO / "draftgen" / "output").rglob("*.py")
    ):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            position = {"RowError": 0, "parse_json": 1, "Reject": 3, "RawRow": 2}.get(name or "")
            if position is None or len(node.args) <= position:
                continue
            arg = node.args[position]
            if isinstance(arg, ast.Tuple) and arg.elts:
                arg = arg.elts[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add((path.name, arg.value))
    return found


def test_every_reason_the_code_spells_is_in_the_enum() -> None:
    found = _literal_reasons()
    assert len({r for _, r in found}) >= 10, "the scan found too few reasons to be working"
    assert [(f, r) for f, r in sorted(found) if r not in set(metrics.RejectReason)] == []


def test_docs_metrics_md_is_generated_from_the_definitions() -> None:
    current = metrics_doc.DOC.read_text()
    assert metrics_doc.render(current) == current, "docs/metrics.md is stale: make metrics-doc"
    for m in metrics.ALL:
        assert f"| `{m.name}` |" in current
    for r in metrics.RejectReason:
        assert f"`{r.value}`" in current


def test_the_one_parser_reads_back_what_the_generators_registry_serves() -> None:
    """The parser both sides call, on the page the generator's own registry renders: every
    figure it reads is non-zero here, so a renamed metric or label reads as a wrong figure."""
    m = GeneratorMetrics(LABELS)
    code = Ledger("code", Budget(completion_tokens=100))
    code.add(40, 70, "stop")
    code.add(30, 50, "length")
    code.add_reject("bad_tools")
    chat = Ledger("chat", Budget(max_samples=5))  # no completion-token budget
    chat.add(3, 4, "stop")
    for ledger in (code, chat):  # the generator's order, not the alphabet's
        m.start_from(ledger)
    m.requests_in_flight.labels("http://s0:30000").set(2)
    m.completion_tokens_per_second.set(12.5)
    m.eta.set(float("inf"))
    m.job_done.set(1)
    page = metrics.read_generator_page(generate_latest(m.registry).decode())
    assert page.datasets == (
        metrics.DatasetSeries("code", 2, 1, 70, 120, 1, 100, True),
        metrics.DatasetSeries("chat", 1, 0, 3, 4, 0, None, False),
    )
    assert page.servers == ("http://s0:30000",)
    assert (page.throughput, page.eta_seconds, page.job_done) == (12.5, None, True)
    assert page.series == len(_page(m))


def test_the_parser_reads_only_the_generators_series_and_refuses_a_non_page() -> None:
    page = metrics.read_generator_page('# TYPE x gauge\nx{dataset="code"} 1\n')
    assert page == metrics.GeneratorPage()  # no job gauges either: job_done unknown, not False
    with pytest.raises(metrics.PageError):
        metrics.read_generator_page("{not prometheus")
