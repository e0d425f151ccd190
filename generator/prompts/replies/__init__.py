"""A target's reply read back into the assistant message a production server would have returned:
its content, reasoning and tool calls, parsed from the decoded output ids (special tokens kept)
by the family's rules — those of SGLang's own reasoning parsers and function-call detectors — so
an on-policy chain can send the conversation back as a client would (issue 29). Pure functions.

    parser = reply_parser_for(template, added_tokens)        # or reply_parser_for_tokenizer(tok)
    reply = parser.parse(text, started_in_reasoning=parser.prompt_opens_reasoning(prompt_text))
    reply.as_message(history_calls)                          # the OpenAI assistant message
    compare_calls(reply.tool_calls, calls_of_message(dataset_turn))   # "match" or why not
    rename_tool_results(results, dict(zip(dataset_ids, reply.call_ids(history_calls))))

docs/models.md ("Replies read back") has each family's rules.
"""

from .detect import FAMILIES, UnknownReplyFamily, reply_parser_for, reply_parser_for_tokenizer
from .families import DeepSeekParser, KimiParser, Llama3Parser, Qwen3Parser
from .harmony import GptOssParser
from .model import (
    CallMatch,
    Reply,
    ReplyParser,
    ToolCall,
    arguments_text,
    calls_of_message,
    compare_calls,
    json_equal,
    rename_tool_results,
)

__all__ = [
    "FAMILIES",
    "CallMatch",
    "DeepSeekParser",
    "GptOssParser",
    "KimiParser",
    "Llama3Parser",
    "Qwen3Parser",
    "Reply",
    "ReplyParser",
    "ToolCall",
    "UnknownReplyFamily",
    "arguments_text",
    "calls_of_message",
    "compare_calls",
    "json_equal",
    "rename_tool_results",
    "reply_parser_for",
    "reply_parser_for_tokenizer",
]
