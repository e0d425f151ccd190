"""`--format speculators`: rows shaped like vllm-project/speculators' response regeneration
output (`scripts/response_regeneration`): `id`, `primary_id`, `input_ids` (prompt + completion),
`loss_mask` (0 on the prompt, 1 on generated tokens), `text` (a review-only decode with special
tokens kept) and `metadata`. The ids are the records' ids, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draftgen.contract.model_location import model_name
from draftgen.output.record import Record

from .jsonl import write_jsonl_splits
from .tokenizer import decode

# speculators 0.9's `prepare-data --seq-length` default (speculators/cli/prepare_data.py): longer
# rows are cut.
SPECULATORS_DEFAULT_SEQ_LENGTH = 8192

# Tokens that open a tool call in the chat formats draftgen knows (Kimi-K2, Hermes/Qwen).
TOOL_CALL_MARKERS = ("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<tool_call>")


def tool_call_ids(tokenizer: Any) -> frozenset[int]:
    """Ids of the tool-call opening tokens this tokenizer has as single entries."""
    ids = set()
    unk = getattr(tokenizer, "unk_token_id", None)
    for marker in TOOL_CALL_MARKERS:
        token_id = tokenizer.convert_tokens_to_ids(marker)
        if isinstance(token_id, int) and token_id != unk:
            ids.add(token_id)
    return frozenset(ids)


def primary_id(sample_id: str) -> str:
    """The conversation a sample came from: its id without the trailing `/<turn>`."""
    head, sep, tail = sample_id.rpartition("/")
    return head if sep and tail.isdigit() else sample_id


def ids_and_mask(record: Record) -> tuple[list[int], list[int]]:
    """The training sequence of a record: prompt then completion, unchanged, with a loss mask
    of 0 on every prompt token (the generation prefix such as `<think>` included) and 1 on
    every generated token (the end-of-turn token included); a merged chain's earlier turns'
    output ids inside the prompt are supervised too (`chains.ChainRecord`)."""
    prompt, completion = record.input_ids, record.output_ids
    mask = [0] * len(prompt) + [1] * len(completion)
    for start, end in getattr(record, "supervised", ()):  # a chain's earlier turns (chains.py)
        mask[start:end] = [1] * (end - start)
    return [*prompt, *completion], mask


def to_speculators(
    record: Record, tokenizer: Any, tool_ids: frozenset[int] = frozenset()
) -> dict[str, Any]:
    prompt, completion = record.input_ids, record.output_ids
    input_ids, loss_mask = ids_and_mask(record)
    meta = record.meta
    return {
        "id": record.id,
        "primary_id": primary_id(record.id),
        "input_ids": input_ids,
        "loss_mask": loss_mask,
        "text": decode(tokenizer, input_ids),
        "metadata": {
            "idx": record.source_index,
            "dataset": record.dataset,
            "turn": record.turn,
            "finish_reason": record.finish_reason,
            "matched_stop": record.matched_stop,
            "is_tool_call": any(t in tool_ids for t in completion),
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(completion),
                "total_tokens": len(input_ids),
            },
            "endpoint": None if meta is None else meta.server,
            "sampling_params": None if meta is None else meta.sampling,
        },
    }


def write(out_dir: Path, rows, tokenizer: Any) -> dict[str, Path]:
    tool_ids = tool_call_ids(tokenizer)
    return write_jsonl_splits(out_dir, rows, lambda r: to_speculators(r, tokenizer, tool_ids))


def prepare_data_hint(train_file: Path, longest: int, model: str | None) -> str:
    """The `speculators prepare-data` command that takes this export whole: `--seq-length` the
    longest exported row, as SpecForge's hint gives `max_length`. The model is named as the card
    names it (a hub id, or a local directory's name: put its path there)."""
    default = SPECULATORS_DEFAULT_SEQ_LENGTH
    why = (
        f"the longest exported row; the default {default} would cut longer rows"
        if longest > default
        else f"the longest exported row (default {default})"
    )
    return "\n".join(
        [
            f"speculators prepare-data --model {model_name(model) if model else 'TARGET_MODEL'} \\",
            f"    --data {train_file} --output PREPARED \\",
            f"    --seq-length {longest}  # {why}",
        ]
    )
