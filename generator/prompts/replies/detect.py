"""Which family's reply parser reads a model's replies, told from its chat template and its
tokenizer's added tokens (the markers each family's replies are written in)."""

from __future__ import annotations

from collections.abc import Collection

from draftgen.errors import DraftgenError, ExitCode

from .families import DeepSeekParser, KimiParser, Llama3Parser, Qwen3Parser
from .harmony import GptOssParser
from .model import ReplyParser

FAMILIES = (
    "kimi-k2",
    "qwen3",
    "deepseek-v3.1",
    "deepseek-r1",
    "gpt-oss",
    "llama-3.1",
)


class UnknownReplyFamily(DraftgenError, ValueError):
    """The model's replies are in no format draftgen can parse back into messages."""

    exit_code = ExitCode.INVALID
    fix = (
        "use spec.model of a supported family (Kimi-K2, Qwen3, DeepSeek-V3.1/R1, gpt-oss, "
        "Llama-3.1) or keep the dataset's history: dataset"
    )


def reply_parser_for(
    template: str, special_tokens: Collection[str], model: str = "spec.model"
) -> ReplyParser:
    """The reply parser of the family whose chat `template` (the Jinja text) and tokenizer
    `special_tokens` (its added tokens' texts, special or not) these are; `model` names the model
    in the error raised (`UnknownReplyFamily`) when no family fits."""
    tokens = set(special_tokens)

    def has(*markers: str) -> bool:
        return all(m in tokens or m in template for m in markers)

    if has("<|channel|>", "<|message|>", "<|start|>"):
        return GptOssParser()
    if has("<|tool_calls_section_begin|>") or has("<|im_assistant|>", "<|im_middle|>"):
        return KimiParser()
    if has("<｜Assistant｜>") or has("<｜tool▁calls▁begin｜>"):
        # R1 and V3 write a call as `function<｜tool▁sep｜>NAME` and a ```json fence; V3.1
        # drops both. R1's and V3's templates and vocabularies do not tell them apart: one
        # parser, whose reasoning needs a tag in the reply or the prompt.
        if "```json" in template:
            return DeepSeekParser(
                family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True
            )
        return DeepSeekParser()
    if has("<|im_start|>", "<|im_end|>"):
        return Qwen3Parser()
    if has("<|start_header_id|>", "<|eot_id|>"):
        return Llama3Parser()
    raise UnknownReplyFamily(
        f"{model}: its chat template and tokenizer match none of the reply formats draftgen "
        f"parses ({', '.join(FAMILIES)}), so the target's replies cannot be turned back into "
        "messages for history: regenerated"
    )


def reply_parser_for_tokenizer(tokenizer: object, model: str = "spec.model") -> ReplyParser:
    """`reply_parser_for` of a loaded Hugging Face tokenizer: its `chat_template` and its added
    vocabulary (`get_added_vocab()`)."""
    template = getattr(tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):  # named templates: the default one, then any
        template = template.get("default") or "\n".join(template.values())
    get_added = getattr(tokenizer, "get_added_vocab", None)
    added = get_added() if callable(get_added) else {}
    return reply_parser_for(str(template), list(added), model)
