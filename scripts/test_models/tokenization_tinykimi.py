"""A tiktoken tokenizer shipped as remote code, shaped like Kimi-K2.5's `tokenization_kimi.py`
(a test fixture of draftgen, copied into the model directory by scripts/build_test_models.py).

Loaded only with `trust_remote_code=True` (tokenizer_config.json's `auto_map`). It wraps a tiktoken
BPE file (`tiktoken.model`: base64 token and rank per line), puts Kimi's special tokens at their
real ids (from `added_tokens_decoder`) and fills the rest of the 256 special slots with
`<|reserved_token_N|>`. Its `apply_chat_template` converts `tools` to a TypeScript-like declaration
in Python and hands it to the template as `tools_ts_str`, as Kimi-K2.5's does; a schema outside
what the converter handles (an `enum` whose values do not match the declared `type`, e.g. numbers
on a string, or an unknown `type`) makes it print "Failed to convert tools to TypeScript style: ..."
to stdout and leave the declaration to the template, which writes the tools as JSON: the silent
fallback a caller has to notice.
"""

from __future__ import annotations

import json
import os
from typing import Any

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from transformers import PreTrainedTokenizer

VOCAB_FILES_NAMES = {"vocab_file": "tiktoken.model"}
NUM_RESERVED_SPECIAL_TOKENS = 256
# GPT-2's split, as tiny-kimi's ByteLevel pre-tokenizer: with the same BPE ranks this tokenizer
# then gives tiny-kimi's ids, so the tiny-kimi server (whose /tokenize the generator compares
# with the job's tokenizer at start) serves it.
PAT_STR = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


# The one definition: this file is shipped into the model directory and loaded by transformers as
# remote code, so it must stand alone; the builder (scripts/test_models/bpe.py) reads it from here.
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map: token strings for the Python API."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


_ENUM_VALUE_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


class TypeScriptConversionError(ValueError):
    """A schema the TypeScript-style converter does not handle."""


def _ts_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if "enum" in schema:
        allowed = _ENUM_VALUE_TYPES.get(kind) if isinstance(kind, str) else None
        for v in schema["enum"]:
            ok = allowed is None or (
                isinstance(v, allowed) and not (isinstance(v, bool) and bool not in allowed)
            )
            if not ok:
                raise TypeScriptConversionError(f"enum value {v!r} is not of type {kind!r}")
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if isinstance(kind, list):
        return " | ".join(_ts_type({"type": k}) for k in kind)
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        return _ts_type(schema.get("items")) + "[]"
    if kind == "object" and schema.get("properties"):
        return "{\n" + _ts_props(schema) + "}"
    if kind == "object":
        return "object"
    if kind is None or kind == "null":
        return "any" if kind is None else "null"
    raise TypeScriptConversionError(f"unsupported type {kind!r}")


def _ts_props(schema: dict) -> str:
    required = set(schema.get("required") or [])
    out = ""
    for name, prop in schema["properties"].items():
        if isinstance(prop, dict) and prop.get("description"):
            out += f"// {prop['description']}\n"
        out += f"{name}{'' if name in required else '?'}: {_ts_type(prop)},\n"
    return out


def encode_tools_to_typescript_style(tools: list[dict]) -> str:
    """`tools` (OpenAI function format) as a TypeScript-like namespace, as Kimi declares them."""
    lines = ["# Tools", "## functions", "namespace functions {"]
    for tool in tools:
        fn = tool.get("function", tool)
        if fn.get("description"):
            lines.append(f"// {fn['description']}")
        params = fn.get("parameters") or {}
        args = f": {{\n{_ts_props(params)}}}" if params.get("properties") else ""
        lines.append(f"type {fn['name']} = (_{args}) => any;")
    lines.append("}")
    return "\n".join(lines)


def deep_sort_dict(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: deep_sort_dict(v) for k, v in sorted(obj.items())}
    if isinstance(obj, list):
        return [deep_sort_dict(v) for v in obj]
    return obj


class TinyKimiTokenizer(PreTrainedTokenizer):
    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012 (as transformers declares it)

    def __init__(
        self,
        vocab_file: str,
        bos_token: str = "[BOS]",
        eos_token: str = "[EOS]",
        unk_token: str | None = None,
        pad_token: str | None = None,
        added_tokens_decoder: dict | None = None,
        **kwargs: Any,
    ) -> None:
        assert os.path.isfile(vocab_file), vocab_file
        mergeable_ranks = load_tiktoken_bpe(vocab_file)
        num_base_tokens = len(mergeable_ranks)
        used = {
            int(i): str(getattr(t, "content", t)) for i, t in (added_tokens_decoder or {}).items()
        }
        self.special_tokens = {
            used.get(i, f"<|reserved_token_{i}|>"): i
            for i in range(num_base_tokens, num_base_tokens + NUM_RESERVED_SPECIAL_TOKENS)
        }
        self.model = tiktoken.Encoding(
            name=os.path.basename(vocab_file),
            pat_str=PAT_STR,
            mergeable_ranks=mergeable_ranks,
            special_tokens=self.special_tokens,
        )
        self.n_words = num_base_tokens + NUM_RESERVED_SPECIAL_TOKENS
        b2u = bytes_to_unicode()
        self.decoder = {
            rank: "".join(b2u[b] for b in token) for token, rank in mergeable_ranks.items()
        }
        self.decoder.update({i: s for s, i in self.special_tokens.items()})
        self.encoder = {s: i for i, s in self.decoder.items()}
        self.byte_decoder = {c: b for b, c in b2u.items()}
        super().__init__(
            bos_token=bos_token,
            eos_token=eos_token,
            unk_token=unk_token,
            pad_token=pad_token,
            added_tokens_decoder=added_tokens_decoder,
            **kwargs,
        )

    @property
    def vocab_size(self) -> int:
        return self.n_words

    def get_vocab(self) -> dict[str, int]:
        return dict(self.encoder)

    # The fast path, as Kimi's: straight to tiktoken, special tokens recognized in the text.
    def encode(self, text: str, allow_special_tokens: bool = True, **kwargs: Any) -> list[int]:
        if kwargs:
            return super().encode(text, **kwargs)
        return self.model.encode(
            text, allowed_special="all" if allow_special_tokens else set(), disallowed_special=()
        )

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        return [self.decoder[i] for i in self.model.encode(text, disallowed_special=())]

    def _convert_token_to_id(self, token: str) -> int:
        return self.encoder[token]

    def _convert_id_to_token(self, index: int) -> str:
        return self.decoder[index]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        out = bytearray()
        for token in tokens:
            if token in self.special_tokens:
                out += token.encode("utf-8")
            else:
                out += bytes(self.byte_decoder[c] for c in token)
        return out.decode("utf-8", errors="replace")

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple:
        raise NotImplementedError("a read-only test fixture")

    def apply_chat_template(
        self,
        conversation: Any,
        tools: list[dict] | None = None,
        tokenize: bool = False,
        add_generation_prompt: bool = False,
        **kwargs: Any,
    ) -> Any:
        tools = deep_sort_dict(tools)
        if tools:
            try:
                kwargs["tools_ts_str"] = encode_tools_to_typescript_style(tools)
            except Exception as err:  # as Kimi-K2.5's: a word on stdout, then the JSON fallback
                print(f"Failed to convert tools to TypeScript style: {err}")
        return super().apply_chat_template(
            conversation,
            tools=tools,
            tokenize=tokenize,
            add_generation_prompt=add_generation_prompt,
            **kwargs,
        )
