"""Row order: `sequential` (file order, streamed) or a seeded `shuffle`, the same on every run.

`sequential` reads the source straight through without a first pass. `shuffle` makes one cheap
pass to index the rows (an offset per row, see `sources.RowIndex`), builds a seeded permutation
of the row numbers (4 bytes per row) and reads rows in that order on demand, so a budget that
stops early takes a random subset, and the same subset on every run: resume continues the same
order. Only `random.Random.random()` is used, whose sequence Python guarantees for a given seed
across versions (`shuffle`'s own algorithm is not guaranteed).
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator
from pathlib import Path

from draftgen.generator.rows.sources import RawRow, RowIndex, iter_rows
from draftgen.spec import Selection


def permutation(n: int, seed: int) -> array:
    """A seeded Fisher–Yates permutation of `range(n)`."""
    order = array("I", range(n))
    rng = random.Random(seed)
    for i in range(n - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order


def select_rows(files: list[Path], selection: Selection) -> Iterator[RawRow]:
    """The source's rows in the order `selection` asks for."""
    if selection.mode == "sequential":
        yield from iter_rows(files)
        return
    index = RowIndex(files)
    for i in permutation(len(index), selection.seed):
        yield index.read(i)
