"""`--format parquet`: a Hugging Face `datasets` dataset directory: `data/<split>-NNNNN.parquet`
plus a dataset card `README.md` whose YAML header declares the splits, so
`datasets.load_dataset(PATH)` finds them without network access."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from draftgen.output.record import Record

SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("source_index", pa.int64()),
        pa.field("turn", pa.int64()),
        pa.field("input_ids", pa.list_(pa.int64()), nullable=False),
        pa.field("output_ids", pa.list_(pa.int64()), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("finish_reason", pa.string(), nullable=False),
        pa.field("matched_stop", pa.string()),
        pa.field("meta", pa.string()),
    ]
)
"""Columns; `matched_stop` and `meta` hold JSON text (the stop may be an id or a string)."""

ROW_GROUP_ROWS = 1_000
ROW_GROUP_TOKENS = 1_000_000
"""A row group closes at whichever comes first; the token bound keeps memory flat for long
sequences (a row group is built in memory as Python lists first)."""
ROWS_PER_FILE = 100_000


def to_row(record: Record) -> dict[str, Any]:
    stop, meta = record.matched_stop, record.meta
    return {
        "id": record.id,
        "dataset": record.dataset,
        "source_index": record.source_index,
        "turn": record.turn,
        "input_ids": record.input_ids,
        "output_ids": record.output_ids,
        "prompt_tokens": len(record.input_ids),
        "completion_tokens": len(record.output_ids),
        "finish_reason": record.finish_reason,
        "matched_stop": None if stop is None else json.dumps(stop, ensure_ascii=False),
        "meta": (
            None if meta is None else json.dumps(meta.to_json(), ensure_ascii=False, sort_keys=True)
        ),
    }


class _SplitWriter:
    """Row groups of ROW_GROUP_ROWS rows or ROW_GROUP_TOKENS tokens, a new file every
    ROWS_PER_FILE rows."""

    def __init__(self, data_dir: Path, split: str, rows_per_file: int) -> None:
        self.data_dir, self.split, self.rows_per_file = data_dir, split, rows_per_file
        self.buffer: list[dict[str, Any]] = []
        self.buffered_tokens = 0
        self.writer: pq.ParquetWriter | None = None
        self.files: list[Path] = []
        self.rows_in_file = 0

    def add(self, record: Record) -> None:
        self.buffer.append(to_row(record))
        self.buffered_tokens += len(record.input_ids) + len(record.output_ids)
        if len(self.buffer) >= ROW_GROUP_ROWS or self.buffered_tokens >= ROW_GROUP_TOKENS:
            self.flush()

    def flush(self) -> None:
        self.buffered_tokens = 0
        while self.buffer:
            if self.writer is None or self.rows_in_file >= self.rows_per_file:
                self._next_file()
            room = self.rows_per_file - self.rows_in_file
            chunk, self.buffer = self.buffer[:room], self.buffer[room:]
            assert self.writer is not None  # _next_file() opened it
            self.writer.write_table(pa.Table.from_pylist(chunk, schema=SCHEMA))
            self.rows_in_file += len(chunk)

    def _next_file(self) -> None:
        if self.writer is not None:
            self.writer.close()
        path = self.data_dir / f"{self.split}-{len(self.files):05d}.parquet"
        self.files.append(path)
        self.writer = pq.ParquetWriter(path, SCHEMA, compression="zstd")
        self.rows_in_file = 0

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()


def write(
    out_dir: Path, rows: Iterable[tuple[str, Record]], rows_per_file: int = ROWS_PER_FILE
) -> dict[str, list[Path]]:
    """Parquet files per split (the card is written separately, once counts are known)."""
    data_dir = Path(out_dir) / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    writers: dict[str, _SplitWriter] = {}
    try:
        for split, record in rows:
            writer = writers.get(split)
            if writer is None:
                writer = writers[split] = _SplitWriter(data_dir, split, rows_per_file)
            writer.add(record)
    finally:
        for writer in writers.values():
            writer.close()
    return {split: w.files for split, w in writers.items()}
