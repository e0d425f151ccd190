"""A YAML reader for job files that refuses what PyYAML's safe loader silently accepts: a
duplicate key (the last one would win), aliases (`*name`, the way to a billion-laughs bomb), and
nesting deep enough to exhaust the recursive composer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

MAX_DEPTH = 64
"""A job is a handful of levels deep; far below where PyYAML's recursion would fail."""


class StrictYAMLError(DraftgenError, ValueError):
    """The file is YAML but not a job file draftgen reads; the message names the line and the fix."""

    exit_code = ExitCode.INVALID
    fix = "fix the YAML at the line named (one key once, no anchors, no custom tags)"


def _where(node_or_mark: Any) -> str:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _StrictLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise StrictYAMLError(
                f"{_where(event)}: YAML alias *{event.anchor} is not accepted in a job file "
                "(aliases can expand without bound); write the value out"
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise StrictYAMLError(
                    f"{_where(self.peek_event())}: nested deeper than {MAX_DEPTH} levels; a job "
                    "file is a few levels deep: check the indentation and brackets"
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class reports it
                break
            if first is not None:
                raise StrictYAMLError(
                    f"{_where(key_node)}: duplicate key {key!r} (first at {_where(first)}); "
                    "keep one of them"
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_all(text: str) -> Iterator[Any]:
    """Every document in `text`, as `yaml.safe_load_all` would give them, or `StrictYAMLError`."""
    loader = _StrictLoader(text)
    try:
        while loader.check_data():
            yield loader.get_data()
    finally:
        loader.dispose()
