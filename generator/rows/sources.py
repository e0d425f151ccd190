"""Reading dataset sources: JSONL, Parquet, CSV/TSV and Arrow files, or directories of them, row by row.

Rows are numbered 0, 1, 2, ... across the files in name order (blank JSONL lines do not count),
which is the `source_index` of every sample and reject. A row that cannot be read — invalid
UTF-8, malformed JSON (a number past 4,300 digits and nesting past 100 levels included), not a
JSON object, a Parquet row group with a damaged page — comes out as a `RawRow` with an `error` instead of
data, so it becomes a recorded reject and never stops the job. A missing, empty or unreadable
source is a `SourceError` (the whole dataset is wrong, not a row).

Reading is lazy: `iter_rows` streams; `RowIndex` (for `selection: shuffle`) makes one cheap pass
that keeps only a byte offset (JSONL) or a row-group position (Parquet) per row, then reads rows
on demand. Arrow files (`.arrow`: the IPC *stream* format `datasets`' `save_to_disk` writes, or the
IPC file format) are memory-mapped, not loaded. Which files a Hugging Face dataset's split holds is
`hf`'s question; this module reads the files it is given.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import draftgen.safe_json as safe_json
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".tsv")
"""A header row names the columns; every value is text (`spec.datasets[].columns` maps them)."""
ARROW_SUFFIXES = (".arrow",)
DATA_SUFFIXES = JSONL_SUFFIXES + PARQUET_SUFFIXES + CSV_SUFFIXES + ARROW_SUFFIXES
_PARQUET_BATCH = 256
# Decoded Parquet row groups kept (as compact Arrow tables) for random access under shuffle. A
# source whose decoded size fits is decoded once; a larger one re-reads row groups as the shuffled
# order wanders (correct, slower: prefer JSONL or small row groups for huge shuffled sources).
ROW_GROUP_CACHE_BYTES = 1 << 30


class SourceError(DraftgenError, ValueError):
    """A dataset source cannot be read at all (missing, empty, not JSONL/Parquet, corrupt), or
    its `split` names none of the dataset's splits (`field` says which of the two)."""

    exit_code = ExitCode.INVALID
    fix = "fix spec.datasets[].source for the dataset named"

    def __init__(self, message: str, field: str = "source") -> None:
        super().__init__(message)
        self.field = field
        """The dataset's field at fault: `source` or `split`."""


@dataclass(frozen=True, slots=True)
class RawRow:
    """One source row: its data, or why it could not be read."""

    index: int
    """Row number across the source's files (0-based)."""

    data: dict[str, Any] | None
    """The decoded JSON object / Parquet row; None when `error` is set."""

    error: tuple[str, str] | None = None
    """`(reason, detail)` when the row is unreadable: `invalid_utf8`, `malformed_json`, `wrong_type`,
    `unreadable_row_group` (a damaged Parquet page)."""

    digest: str | None = None
    """For an unreadable JSONL line: a hash of its bytes, so its reject stays the same one when
    rows are inserted above it (its row number changes, its content does not)."""


def resolve_source(source: str, base_dir: Path) -> Path:
    """`spec.datasets[].source` → a path: `file://` stripped, relative paths below `base_dir`."""
    path = Path(source.removeprefix("file://"))
    return path if path.is_absolute() else Path(base_dir) / path


def _is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and not name.startswith(".") and name.endswith(DATA_SUFFIXES)


def list_files(path: Path) -> list[Path]:
    """The data files of a source: the file itself, or a directory's JSONL/Parquet files in name
    order (recursively, by relative path), so row numbers are the same on every run."""
    if path.is_file():
        if not path.name.lower().endswith(DATA_SUFFIXES):
            raise SourceError(
                f"{path}: not a JSONL (.jsonl/.json/.ndjson), Parquet, CSV/TSV or Arrow file; "
                "convert it or point source at one"
            )
        _refuse_json_array(path)
        return [path]
    if path.is_dir():
        files = sorted(
            (p for p in path.rglob("*") if _is_data_file(p)),
            key=lambda p: p.relative_to(path).as_posix(),
        )
        if not files:
            raise SourceError(
                f"{path}: directory holds no .jsonl, .parquet, .csv or .arrow files; check the "
                "dataset's source"
            )
        for file in files:
            _refuse_json_array(file)
        return files
    raise SourceError(
        f"{path}: no such file or directory; check the dataset's source (relative "
        "paths are resolved from the job file's directory, or spec.inputs in a cluster)"
    )


def _is_csv(path: Path) -> bool:
    return path.name.lower().endswith(CSV_SUFFIXES)


def _csv_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a CSV (`.csv`) or TSV (`.tsv`) file as {column: text}, in file order."""
    import csv

    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    csv.field_size_limit(1 << 30)  # long prompts
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        if not reader.fieldnames:
            raise SourceError(f"{path}: no header row naming the columns; add one")
        return [dict(row) for row in reader]


def _refuse_json_array(path: Path) -> None:
    """A `.json` file that is one JSON array (ShareGPT's usual published shape) is not JSONL:
    its first line would be a `malformed_json` reject and every other line too. Say so at once."""
    if not path.name.lower().endswith(JSONL_SUFFIXES):
        return
    with open(path, "rb") as fh:
        head = fh.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"["):
        raise SourceError(
            f"{path}: a JSON array, not JSONL (one JSON object a line); convert it once: "
            f"jq -c '.[]' {path.name} > {path.stem}.jsonl (or python -c \"import json,sys; "
            '[print(json.dumps(r)) for r in json.load(open(sys.argv[1]))]" FILE > FILE.jsonl), '
            "then point source at the .jsonl"
        )


def _is_parquet(path: Path) -> bool:
    return path.name.lower().endswith(PARQUET_SUFFIXES)


def _is_arrow(path: Path) -> bool:
    return path.name.lower().endswith(ARROW_SUFFIXES)


def arrow_table(path: Path) -> Any:
    """An Arrow IPC file, stream format (`save_to_disk`'s) or file format, as one table over a
    memory map: its rows are read from the page cache as they are sliced, never all loaded."""
    import pyarrow as pa  # imported lazily: only Arrow and Parquet sources need it

    try:
        source = pa.memory_map(str(path))
        if source.read(6) == b"ARROW1":  # the file format's magic; the stream format has none
            return pa.ipc.open_file(source).read_all()
        source.seek(0)
        return pa.ipc.open_stream(source).read_all()
    except (OSError, pa.ArrowException) as err:
        raise SourceError(
            f"{path}: not a readable Arrow IPC file ({' '.join(str(err).split())[:200]}); the file "
            "is damaged or not Arrow: save the dataset again (datasets' save_to_disk)"
        ) from None


def _iter_arrow(path: Path, start: int) -> Iterator[RawRow]:
    for batch in arrow_table(path).to_batches(max_chunksize=_PARQUET_BATCH):
        for data in batch.to_pylist():
            yield _parquet_row(start, data)
            start += 1


def decode_line(index: int, line: bytes, first: bool = False) -> RawRow:
    """One JSONL line → a row, or a row carrying the reason it is unreadable (and its digest)."""
    row = _decode_line(index, line, first)
    if row.error is None:
        return row
    digest = hashlib.blake2b(line.rstrip(b"\r\n"), digest_size=8).hexdigest()
    return RawRow(index, None, row.error, digest)


def _decode_line(index: int, line: bytes, first: bool) -> RawRow:
    if first and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as err:
        return RawRow(index, None, ("invalid_utf8", f"byte {err.start}: {err.reason}"))
    try:
        data = safe_json.loads(text)
    except safe_json.JsonLimitError as err:
        return RawRow(index, None, ("malformed_json", err.detail))
    if not isinstance(data, dict):
        return RawRow(
            index, None, ("wrong_type", f"a row must be a JSON object, got {type(data).__name__}")
        )
    return RawRow(index, data)


def _iter_jsonl(path: Path, start: int) -> Iterator[RawRow]:
    index = start
    with open(path, "rb") as fh:
        for n, line in enumerate(fh):
            if not line.strip():
                continue
            yield decode_line(index, line, first=n == 0)
            index += 1


def _parquet_file(path: Path):
    import pyarrow.parquet as pq  # imported lazily: only Parquet sources need it

    try:
        return pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises several types for a corrupt file
        raise SourceError(
            f"{path}: not a readable Parquet file ({err}); check the dataset's source"
        ) from None


def _parquet_row(index: int, data: Any) -> RawRow:
    if not isinstance(data, dict):
        return RawRow(index, None, ("wrong_type", "a row must be an object"))
    problem = safe_json.depth_error(data)
    if problem is not None:
        return RawRow(index, None, ("wrong_type", f"the row is {problem}"))
    return RawRow(index, data)


def _group_offset(meta: Any, group: int) -> int:
    """Byte offset in the file where row group `group`'s first column chunk starts."""
    column = meta.row_group(group).column(0)
    offsets = [column.data_page_offset, column.dictionary_page_offset or column.data_page_offset]
    return min(o for o in offsets if o is not None)


def unreadable_group(path: Path, meta: Any, group: int, err: Exception) -> tuple[str, str]:
    """The reject of every row of a damaged row group: the file, the group and its offset."""
    return (
        "unreadable_row_group",
        f"{path}: row group {group} (byte offset {_group_offset(meta, group)}, "
        f"{meta.row_group(group).num_rows} rows) cannot be read: {' '.join(str(err).split())[:200]}",
    )


def _iter_parquet(path: Path, start: int) -> Iterator[RawRow]:
    """Row group by row group, so a damaged page costs the rows of its group (each a reject
    naming the file and the group's offset), not the job."""
    pf = _parquet_file(path)
    meta = pf.metadata
    index = start
    for group in range(meta.num_row_groups):
        end = index + meta.row_group(group).num_rows
        try:
            for batch in pf.iter_batches(batch_size=_PARQUET_BATCH, row_groups=[group]):
                for data in batch.to_pylist():
                    yield _parquet_row(index, data)
                    index += 1
        except Exception as err:  # pyarrow raises OSError, ArrowException, ... for damage
            error = unreadable_group(path, meta, group, err)
            for lost in range(index, end):
                yield RawRow(lost, None, error)
        index = end


def iter_rows(files: list[Path]) -> Iterator[RawRow]:
    """Every row of the files, in order, numbered across files."""
    index = 0
    for path in files:
        if _is_csv(path):
            rows: Iterator[RawRow] = (
                RawRow(index + i, data) for i, data in enumerate(_csv_rows(path))
            )
        elif _is_arrow(path):
            rows = _iter_arrow(path, index)
        else:
            rows = _iter_parquet(path, index) if _is_parquet(path) else _iter_jsonl(path, index)
        for row in rows:
            yield row
            index = row.index + 1


class RowIndex:
    """Random access to the rows of a source after one cheap pass.

    Keeps 12 bytes per row (file number, and a JSONL byte offset or a Parquet row-group number
    and position), never the rows themselves; Parquet row groups are decoded on demand with a
    small cache.
    """

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self._file_of = array("I")  # per row: index into files
        self._where = array("q")  # per row: byte offset (JSONL) or (group << 32 | row) (Parquet)
        self._groups: OrderedDict[tuple[int, int], Any] = OrderedDict()  # Arrow tables
        self._cached_bytes = 0
        self._parquet: dict[int, Any] = {}
        self._csv: dict[int, list[dict[str, Any]]] = {}  # CSV rows may span lines: kept whole
        self._arrow: dict[int, Any] = {}  # memory-mapped tables
        for f, path in enumerate(files):
            if _is_arrow(path):
                self._arrow[f] = arrow_table(path)
                for r in range(self._arrow[f].num_rows):
                    self._file_of.append(f)
                    self._where.append(r)
            elif _is_csv(path):
                self._csv[f] = _csv_rows(path)
                for r in range(len(self._csv[f])):
                    self._file_of.append(f)
                    self._where.append(r)
            elif _is_parquet(path):
                meta = _parquet_file(path).metadata
                for g in range(meta.num_row_groups):
                    for r in range(meta.row_group(g).num_rows):
                        self._file_of.append(f)
                        self._where.append((g << 32) | r)
            else:
                with open(path, "rb") as fh:
                    offset = 0
                    for line in fh:
                        if line.strip():
                            self._file_of.append(f)
                            self._where.append(offset)
                        offset += len(line)

    def __len__(self) -> int:
        return len(self._where)

    def read(self, index: int) -> RawRow:
        f, where = self._file_of[index], self._where[index]
        path = self.files[f]
        if f in self._csv:
            return RawRow(index, self._csv[f][where])
        if f in self._arrow:
            return _parquet_row(index, self._arrow[f].slice(where, 1).to_pylist()[0])
        if _is_parquet(path):
            group = where >> 32
            try:
                table = self._parquet_group(f, group)
                data = table.slice(where & 0xFFFFFFFF, 1).to_pylist()[0]
            except Exception as err:  # a damaged page: this row is a reject, the job goes on
                pf = self._parquet.get(f) or _parquet_file(path)
                return RawRow(index, None, unreadable_group(path, pf.metadata, group, err))
            return _parquet_row(index, data)
        with open(path, "rb") as fh:
            fh.seek(where)
            return decode_line(index, fh.readline(), first=where == 0)

    def _parquet_group(self, f: int, group: int) -> Any:
        key = (f, group)
        if key in self._groups:
            self._groups.move_to_end(key)
            return self._groups[key]
        if f not in self._parquet:
            self._parquet[f] = _parquet_file(self.files[f])
        table = self._parquet[f].read_row_group(group)
        self._groups[key] = table
        self._cached_bytes += table.nbytes
        while self._cached_bytes > ROW_GROUP_CACHE_BYTES and len(self._groups) > 1:
            _, old = self._groups.popitem(last=False)
            self._cached_bytes -= old.nbytes
        return table
