"""`--format specforge`: the pre-tokenized JSONL that SpecForge's training entry reads through
`data.prompts_path` — one `{"id", "input_ids", "loss_mask"}` object per line, the ids exactly as
the target model produced them.

SpecForge 0.2 (`specforge/data/prompt_builder.py`, `prepare_prompt_tasks`) treats a file whose
first record has both `input_ids` and `loss_mask` as pre-tokenized: it takes those two fields
of every line as they are (integers, a 0/1 mask of the same length), cuts them to
`data.max_length` and drops a row left with fewer supervised tokens than the algorithm's
minimum. It ignores every other field, so `id` is there for people, not for SpecForge. No
tokenizer and no chat template touches the ids. (`--format specforge-conversations` is the
re-tokenized alternative.)

The YAML hints below are what `draftgen export` prints and the dataset card shows, so a user
copies keys that fit the export instead of SpecForge's defaults (`data.max_length: 2048`
would cut every longer row).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draftgen.output.record import Record

from .jsonl import write_jsonl_splits
from .speculators import ids_and_mask

# SpecForge 0.2's DataConfig default (specforge/config/schema.py): longer rows are cut.
SPECFORGE_DEFAULT_MAX_LENGTH = 2048


def to_specforge(record: Record) -> dict[str, Any]:
    input_ids, loss_mask = ids_and_mask(record)
    return {"id": record.id, "input_ids": input_ids, "loss_mask": loss_mask}


def write(out_dir: Path, rows) -> dict[str, Path]:
    return write_jsonl_splits(out_dir, rows, to_specforge)


def _max_length_line(longest: int) -> str:
    if longest > SPECFORGE_DEFAULT_MAX_LENGTH:
        return (
            f"  max_length: {longest}  # the longest exported row; SpecForge's default "
            f"{SPECFORGE_DEFAULT_MAX_LENGTH} would cut longer rows"
        )
    return f"  max_length: {longest}  # the longest exported row (default {SPECFORGE_DEFAULT_MAX_LENGTH})"


def yaml_hint(train_file: Path, longest: int) -> str:
    """The `data:` keys of a SpecForge run config that train on this export as it is."""
    return "\n".join(
        [
            "data:",
            f"  prompts_path: {train_file}  # pre-tokenized: ids and loss mask used as written",
            _max_length_line(longest),
        ]
    )


def conversations_yaml_hint(
    train_file: Path, longest: int, preformatted: bool, chat_template: str
) -> str:
    """The `data:` keys for `--format specforge-conversations` (SpecForge re-tokenizes)."""
    return "\n".join(
        [
            "data:",
            f"  train_data_path: {train_file}  # SpecForge renders and tokenizes this text again",
            f"  chat_template: {chat_template}",
            f"  is_preformatted: {'true' if preformatted else 'false'}"
            + ("  # rows are {id, text}" if preformatted else "  # rows are {id, conversations}"),
            "  train_only_last_turn: true  # else assistant turns of the prompt are supervised",
            _max_length_line(longest).replace("exported row", "exported row (in draftgen's ids)"),
        ]
    )
