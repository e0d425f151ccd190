"""Content given as a list of text parts, handed to the template as SGLang's chat endpoint does.

A row may write a message's content as parts (`[{type: text, text: ...}, ...]`); the rows layer
keeps two or more of them as that list. What the template then sees is what SGLang 0.5's
`/v1/chat/completions` gives it (`serving_chat._apply_jinja_template`,
`jinja_template_utils.detect_jinja_template_content_format` and
`process_content_for_template_format`): SGLang sorts a template into

- `string`, the usual case (no loop over a message's content): the text parts joined with a
  space, `" ".join(texts)`;
- `openai`, a template that loops over `message.content` (or `msg.content`, `m.content`), or
  names `image`, `audio`, `video` or `vision` anywhere: the parts themselves, which the template
  joins its own way (Kimi-K2.5's prints them one after the other); a `tool` message's text
  parts are still joined with a space (`normalize_tool_content`).

`content_format` repeats that classification (with jinja2's parser, as SGLang does), `flatten`
applies it to a conversation.
"""

from __future__ import annotations

from typing import Any, Literal

ContentFormat = Literal["string", "openai"]

_MEDIA_WORDS = ("image", "audio", "video", "vision")
_MESSAGE_NAMES = ("message", "msg", "m")


def _is_content_of(node: Any, names: tuple[str, ...]) -> bool:
    """`name.content` or `name['content']` for one of `names`, through filters, tests and
    slices (`message.content | list`, `message['content'][1:]`)."""
    import jinja2.nodes as n

    if isinstance(node, n.Filter | n.Test) and node.node is not None:
        return _is_content_of(node.node, names)
    if isinstance(node, n.Getitem) and isinstance(node.arg, n.Slice):
        return _is_content_of(node.node, names)
    if isinstance(node, n.Getattr):
        return node.attr == "content" and isinstance(node.node, n.Name) and node.node.name in names
    if isinstance(node, n.Getitem):
        return (
            isinstance(node.arg, n.Const)
            and node.arg.value == "content"
            and isinstance(node.node, n.Name)
            and node.node.name in names
        )
    return False


def content_format(template: str | None) -> ContentFormat:
    """How SGLang hands list content to this template (see the module docstring)."""
    if not template:
        return "string"
    if any(word in template for word in _MEDIA_WORDS):
        return "openai"
    import jinja2.nodes

    try:  # parsed by the environment transformers compiles it in, as SGLang does
        from transformers.utils.chat_template_utils import _compile_jinja_template

        ast = _compile_jinja_template(template).environment.parse(template)
    except Exception:  # SGLang, too, treats a template it cannot parse as `string`
        return "string"
    for loop in ast.find_all(jinja2.nodes.For):
        if _is_content_of(loop.iter, _MESSAGE_NAMES):
            return "openai"
    return "string"


def _joined(parts: list[Any]) -> str:
    return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in parts)


def flatten(messages: list[dict], fmt: ContentFormat) -> list[dict]:
    """`messages` with list content as SGLang gives it to a `fmt` template (copies where a
    message changes; the others are shared)."""
    if not any(isinstance(m.get("content"), list) for m in messages):
        return messages
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list) and (fmt == "string" or m.get("role") == "tool"):
            m = {**m, "content": _joined(content)}
        out.append(m)
    return out
