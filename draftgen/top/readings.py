"""Pages and documents → readings, without I/O: the generator's `/metrics` page (names from
draftgen/contract/metrics.py), an SGLang server's `/metrics` page, a job manifest
(docs/output-format.md) and a GenerationJob object (its spec for order and budgets, its status
for counts)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from draftgen.contract import metrics as names
from draftgen.contract import saturation
from draftgen.contract.metrics import PageError
from draftgen.output.manifest import JobManifest

from .model import Budget, DatasetReading, ServerReading


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class GeneratorPage:
    """What the generator's `/metrics` page says, as top's readings."""

    datasets: list[DatasetReading] = field(default_factory=list)
    """In the page's order, which is the order the generator opened them: spec order."""
    servers: list[str] = field(default_factory=list)
    """The server URLs it sends to (the `server` label of its in-flight gauge)."""
    throughput: float | None = None
    eta_seconds: float | None = None
    job_done: bool | None = None
    series: int = 0
    """draftgen_* samples on the page (0: the page has none of the generator's series)."""


def _reading(d: names.DatasetSeries) -> DatasetReading:
    counts = asdict(d)  # the same field names: a renamed one fails here, loudly
    budget = counts.pop("budget_completion_tokens")
    return DatasetReading(**counts, budget=Budget(completion_tokens=budget))


def parse_generator_page(text: str) -> GeneratorPage:
    """The page as the contract's parser reads it (draftgen/contract/metrics.py)."""
    page = names.read_generator_page(text)
    return GeneratorPage(
        [_reading(d) for d in page.datasets],
        list(page.servers),
        page.throughput,
        page.eta_seconds,
        page.job_done,
        page.series,
    )


def parse_server_page(text: str, name: str) -> ServerReading:
    """An SGLang `/metrics` page; a gauge with several label sets (ranks) keeps its largest value,
    the binding one, as the generator's admission reads it."""
    values: dict[str, float] = {}
    for family in names.families(text):
        for s in family.samples:
            if s.name in (saturation.TOKEN_USAGE, saturation.QUEUE, saturation.RUNNING):
                values[s.name] = max(values.get(s.name, s.value), s.value)
    return ServerReading(
        name=name,
        token_usage=values.get(saturation.TOKEN_USAGE),
        running=values.get(saturation.RUNNING),
        queued=values.get(saturation.QUEUE),
    )


def parse_server_ranks(text: str, name: str) -> list[ServerReading]:
    """An SGLang `/metrics` page as one reading per data-parallel rank (`dp_rank`: a KV pool and
    a queue each, named "NAME rank R") when it reports several; else `parse_server_page`'s one.
    Usage high on one rank and a queue on another is no rank's saturation."""
    ranks: dict[str, dict[str, float]] = {}
    for family in names.families(text):
        for s in family.samples:
            rank = s.labels.get("dp_rank")
            if rank is not None and s.name in (
                saturation.TOKEN_USAGE,
                saturation.QUEUE,
                saturation.RUNNING,
            ):
                values = ranks.setdefault(rank, {})
                values[s.name] = max(values.get(s.name, s.value), s.value)
    if len(ranks) < 2:
        return [parse_server_page(text, name)]
    return [
        ServerReading(
            name=f"{name} rank {rank}",
            token_usage=values.get(saturation.TOKEN_USAGE),
            running=values.get(saturation.RUNNING),
            queued=values.get(saturation.QUEUE),
        )
        for rank, values in sorted(
            ranks.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1
        )
    ]


def _budget(raw: Any) -> Budget:
    raw = raw if isinstance(raw, dict) else {}
    return Budget(
        completion_tokens=_int(raw.get("completionTokens")),
        total_tokens=_int(raw.get("totalTokens")),
        max_samples=_int(raw.get("maxSamples")),
    )


@dataclass
class ManifestReading:
    datasets: list[DatasetReading]
    throughput: float | None
    eta_seconds: float | None
    job_done: bool | None
    updated_at: float | None


def parse_job_manifest(data: Any) -> ManifestReading:
    """The job manifest `DIR/manifest.json` the generator rewrites every few seconds."""
    if not isinstance(data, dict) or not isinstance(data.get("datasets"), dict):
        raise PageError("not a job manifest (no `datasets` object)")
    out = []
    for name, d in JobManifest.from_json(data).datasets.items():
        out.append(
            DatasetReading(
                name=name,
                samples=d.samples,
                prompt_tokens=d.prompt_tokens,
                completion_tokens=d.completion_tokens,
                truncated=d.finish_reasons.get("length"),
                rejects=d.rejects,
                budget=_budget(d.budget),
                done=d.done,
                exhausted=d.exhausted,
            )
        )
    rate = data.get("throughput_tokens_per_second")
    eta = data.get("eta_seconds")
    updated = data.get("updated_at")
    return ManifestReading(
        datasets=out,
        throughput=float(rate) if isinstance(rate, int | float) else None,
        eta_seconds=float(eta) if isinstance(eta, int | float) else None,
        job_done=data.get("done") if isinstance(data.get("done"), bool) else None,
        updated_at=_epoch(updated),
    )


def _epoch(value: Any) -> float | None:
    """The manifest's `updated_at`: RFC 3339 as the generator writes it (`2026-12-01T14:08:00Z`),
    or epoch seconds; None when it is neither."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def spec_budgets(job: dict[str, Any]) -> dict[str, Budget]:
    """Dataset name → budget, in spec order, from a GenerationJob object."""
    datasets = ((job.get("spec") or {}).get("datasets")) or []
    return {
        str(d.get("name")): _budget(d.get("budget"))
        for d in datasets
        if isinstance(d, dict) and d.get("name")
    }


def merge_spec(readings: list[DatasetReading], budgets: dict[str, Budget]) -> list[DatasetReading]:
    """Readings in spec order with the spec's whole budget (the generator's page carries only the
    completion-token budget); a dataset of the spec not read yet shows as zero."""
    from dataclasses import replace

    by_name = {r.name: r for r in readings}
    out = [replace(by_name.get(n) or DatasetReading(n), budget=b) for n, b in budgets.items()]
    out += [r for r in readings if r.name not in budgets]
    return out


def status_datasets(job: dict[str, Any]) -> list[DatasetReading]:
    """The GenerationJob status's per-dataset figures (the operator's last scrape)."""
    status = job.get("status") or {}
    out = []
    for d in status.get("datasets") or []:
        if not isinstance(d, dict) or not d.get("name"):
            continue
        out.append(
            DatasetReading(
                name=str(d["name"]),
                samples=_int(d.get("samples")) or 0,
                prompt_tokens=_int(d.get("promptTokens")) or 0,
                completion_tokens=_int(d.get("completionTokens")) or 0,
                truncated=None,
                rejects=_int(d.get("rejects")) or 0,
                budget=Budget(completion_tokens=_int(d.get("budgetCompletionTokens"))),
                done=d.get("done") is True,
            )
        )
    return out
