"""A small output directory written by draftgen's own writer, for the output tests."""

from __future__ import annotations

from pathlib import Path

from draftgen.output.ledger import Ledger
from draftgen.output.manifest import JobManifest
from draftgen.output.record import Meta, Record
from draftgen.output.writer import DatasetWriter, atomic_write_json, encode_line
from draftgen.spec import Budget


def record(i: int, dataset: str = "chat", completion: int = 5) -> Record:
    return Record(
        id=f"{dataset}/r{i}/0",
        dataset=dataset,
        source_index=i,
        turn=0,
        input_ids=[163587, 10 + i, 163606],
        output_ids=[200 + i] * completion,
        prompt_tokens=3,
        completion_tokens=completion,
        finish_reason="stop",
        matched_stop=163586,
        meta=Meta({"temperature": 0.0}, 0, 0.5, "http://127.0.0.1:1", 1, 1.7e9),
    )


def line(i: int, dataset: str = "chat") -> bytes:
    return encode_line(record(i, dataset).to_json())


def write_output(root: Path, n: int = 3, dataset: str = "chat") -> Path:
    """`n` records of one dataset with its manifests, as `draftgen generate` leaves them."""
    writer = DatasetWriter(root / dataset, shard_max_records=100)
    ledger = Ledger(dataset, Budget(completion_tokens=1000))
    for i in range(n):
        rec = record(i, dataset)
        writer.write_record(rec)
        ledger.add(rec.prompt_tokens, rec.completion_tokens, rec.finish_reason)
    manifest = ledger.manifest()
    writer.write_manifest(manifest)
    writer.close()
    job = JobManifest("j", "m", {dataset: manifest}, 0, n, 0.0, None, "2026-01-01T00:00:00Z", False)
    atomic_write_json(root / "manifest.json", job.to_json())
    return root
