"""Names of record fields that more than one layer reads (the typed record will own them)."""

TOOL_FALLBACK = "tool_fallback"
"""Set on a sample (and its record) whose tools the template would not declare: the fallback
declaration was used (docs/generator.md)."""


def reject_key_of(rid: object, source_index: object, reason: object) -> tuple:
    """A reject with a sample id is that sample's, wherever its row moved in the source (rows
    inserted above it shift its index); one without an id (an unreadable row) is its row's."""
    if isinstance(rid, str):
        return (rid, reason)
    return (None, source_index, reason)
