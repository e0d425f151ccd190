"""`--format specforge-conversations`: conversations in the JSONL shape SpecForge reads through
`data.train_data_path` (`{"id", "conversations": [{"role", "content"}, ...]}`), or with
`--specforge-text` the `{"id", "text"}` rows it reads with `data.is_preformatted: true`.

SpecForge renders these messages again with its chat template and re-tokenizes the text, so this
form is lossy by nature (docs/export.md says how); `--format specforge` writes the ids instead. What draftgen can do is keep the text as
the model produced it: the prompt is split back into its turns on the chat format's own role
tokens (ids, not text patterns), and the assistant turn is the generation prefix the template
put at the end of the prompt (Kimi's `<think>`) followed by every generated token, reasoning
and tool-call tokens included; only the final end-of-turn token is left for the template to add.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draftgen.output.record import Record

from .jsonl import write_jsonl_splits
from .records import ExportError
from .tokenizer import decode

ROLES = ("system", "user", "assistant", "tool")

# SpecForge 0.2's registered template (specforge/data/template.py) whose assistant header and
# end-of-turn token match each chat format draftgen can split: `kimi-k2-thinking` marks the
# assistant span from `<|im_assistant|>assistant<|im_middle|>` to `<|im_end|>`.
SPECFORGE_TEMPLATES = {"kimi": "kimi-k2-thinking", "chatml": "qwen"}


class ChatFormat:
    """How one tokenizer's chat template marks turns, by token id."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        ids = {
            t: self._single(t)
            for t in (
                "<|im_system|>",
                "<|im_user|>",
                "<|im_assistant|>",
                "<|im_middle|>",
                "<|im_start|>",
                "<|im_end|>",
            )
        }
        self.end = ids["<|im_end|>"]
        self.middle: int | None
        if ids["<|im_middle|>"] is not None and ids["<|im_user|>"] is not None:
            self.kind = "kimi"
            self.headers = {
                ids["<|im_system|>"]: "system",
                ids["<|im_user|>"]: "user",
                ids["<|im_assistant|>"]: "assistant",
            }
            self.headers.pop(None, None)
            self.middle = ids["<|im_middle|>"]
        elif ids["<|im_start|>"] is not None:
            self.kind = "chatml"
            self.headers = {ids["<|im_start|>"]: ""}
            self.middle = None
        else:
            raise ExportError(
                "--format specforge-conversations: the tokenizer's chat format is neither Kimi-K2 "
                "(<|im_user|>…<|im_middle|>) nor ChatML (<|im_start|>), so its prompts cannot be "
                "split back into messages; use --format specforge, speculators or parquet, which keep ids"
            )
        stops = {self.end, getattr(tokenizer, "eos_token_id", None)}
        self.turn_ends = frozenset(t for t in stops if isinstance(t, int))

    def _single(self, token: str) -> int | None:
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        unk = getattr(self.tokenizer, "unk_token_id", None)
        return token_id if isinstance(token_id, int) and token_id != unk else None

    def split_prompt(self, ids: list[int]) -> tuple[list[dict[str, str]], str]:
        """The prompt's messages and the open assistant turn's text (the generation prefix)."""
        starts = [i for i, t in enumerate(ids) if t in self.headers]
        if not starts:
            raise ExportError(
                "a prompt has no role tokens of its chat format; it cannot be "
                "split into messages (use --format specforge, speculators or parquet)"
            )
        messages: list[dict[str, str]] = []
        prefix = None
        for n, start in enumerate(starts):
            stop = starts[n + 1] if n + 1 < len(starts) else len(ids)
            body = ids[start + 1 : stop]
            closed = self.end is not None and self.end in body
            if closed and self.end is not None:
                body = body[: body.index(self.end)]
            role, name, content = self._turn(ids[start], body)
            if not closed:
                if n + 1 != len(starts) or role != "assistant":
                    raise ExportError(f"a {role!r} turn in a prompt is not closed by <|im_end|>")
                prefix = content
                continue
            message = {"role": role, "content": content}
            if name and name != role:
                message["name"] = name
            messages.append(message)
        if prefix is None:
            raise ExportError(
                "a prompt does not end with an open assistant turn (the generation "
                "prompt); was it rendered with add_generation_prompt?"
            )
        return messages, prefix

    def _turn(self, header: int, body: list[int]) -> tuple[str, str, str]:
        if self.kind == "kimi":
            role = self.headers[header]
            name = ""
            if self.middle in body:
                cut = body.index(self.middle)
                name, body = decode(self.tokenizer, body[:cut]).strip(), body[cut + 1 :]
            if role == "system" and name in ROLES:
                role = name
            return role, name, decode(self.tokenizer, body)
        text = decode(self.tokenizer, body)
        role, _, content = text.partition("\n")
        return role.strip(), "", content

    def completion_text(self, output_ids: list[int]) -> str:
        """Generated text without the final end-of-turn token (the template writes it back)."""
        if output_ids and output_ids[-1] in self.turn_ends:
            output_ids = output_ids[:-1]
        return decode(self.tokenizer, output_ids)


def to_specforge(record: Record, chat: ChatFormat) -> dict[str, Any]:
    try:
        messages, prefix = chat.split_prompt(record.input_ids)
    except ExportError as err:
        raise ExportError(f"record {record.id}: {err}") from err
    messages.append(
        {"role": "assistant", "content": prefix + chat.completion_text(record.output_ids)}
    )
    return {"id": record.id, "conversations": messages}


def to_specforge_text(record: Record, tokenizer: Any) -> dict[str, Any]:
    """The row SpecForge's `--is-preformatted` reads: the whole sequence as rendered text."""
    return {
        "id": record.id,
        "text": decode(tokenizer, record.input_ids + record.output_ids),
    }


def write(out_dir: Path, rows, tokenizer: Any, preformatted: bool = False) -> dict[str, Path]:
    if preformatted:
        return write_jsonl_splits(out_dir, rows, lambda r: to_specforge_text(r, tokenizer))
    chat = ChatFormat(tokenizer)
    return write_jsonl_splits(out_dir, rows, lambda r: to_specforge(r, chat))


def specforge_template(tokenizer: Any) -> str:
    """SpecForge's `data.chat_template` for this tokenizer's chat format (a placeholder when
    draftgen cannot tell, as for `--specforge-text` rows of another format)."""
    try:
        return SPECFORGE_TEMPLATES[ChatFormat(tokenizer).kind]
    except ExportError:
        return "CHOOSE  # a template of specforge/data/template.py matching the model"
