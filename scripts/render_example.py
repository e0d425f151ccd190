"""Render what the operator creates for examples/kimi-k2.5.yaml into docs/operator.md (and the
LeaderWorkerSet of the multi-node examples/kimi-k2.5-h100.yaml into its own section).

The manifests between the `rendered` markers of docs/operator.md come from the operator's own
renderers with default operator settings, never from a hand-written copy; a test runs this script
with --check so the document cannot drift from the code.

    .cache/venv/bin/python scripts/render_example.py           # rewrite the section
    .cache/venv/bin/python scripts/render_example.py --check   # exit 1 if it is stale
    .cache/venv/bin/python scripts/render_example.py --print   # print every manifest as YAML
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from draftgen.controller.render import render_all

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "kimi-k2.5.yaml"
MULTI_NODE_EXAMPLE = REPO / "examples" / "kimi-k2.5-h100.yaml"
DOC = REPO / "docs" / "operator.md"
BEGIN, END = "<!-- BEGIN rendered (scripts/render_example.py) -->", "<!-- END rendered -->"
LWS_BEGIN = "<!-- BEGIN rendered-lws (scripts/render_example.py) -->"
LWS_END = "<!-- END rendered-lws -->"


def manifests(example: Path = EXAMPLE) -> list[dict]:
    raw = yaml.safe_load(example.read_text())
    return render_all(raw["metadata"]["name"], raw["metadata"]["namespace"], raw["spec"])


def lws_section() -> str:
    """The multi-node example's LeaderWorkerSet: the one object that differs in kind."""
    parts = [LWS_BEGIN]
    for obj in manifests(MULTI_NODE_EXAMPLE):
        if obj["kind"] == "LeaderWorkerSet":
            body = yaml.safe_dump(obj, sort_keys=False, width=100)
            parts.append(f"#### {obj['kind']} `{obj['metadata']['name']}`\n\n```yaml\n{body}```")
    parts.append(LWS_END)
    return "\n\n".join(parts)


def section() -> str:
    parts = [BEGIN]
    for obj in manifests():
        if obj["kind"] == "ConfigMap":
            obj = {
                **obj,
                "data": {
                    k: "<the GenerationJob document of examples/kimi-k2.5.yaml>"
                    for k in obj["data"]
                },
            }
        title = f"{obj['kind']} `{obj['metadata']['name']}`"
        body = yaml.safe_dump(obj, sort_keys=False, width=100)
        parts.append(f"#### {title}\n\n```yaml\n{body}```")
    parts.append(END)
    return "\n\n".join(parts)


def updated(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    text = text[:start] + section() + text[end:]
    start, end = text.index(LWS_BEGIN), text.index(LWS_END) + len(LWS_END)
    return text[:start] + lws_section() + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/operator.md is stale")
    parser.add_argument("--print", action="store_true", help="print the manifests as YAML")
    args = parser.parse_args(argv)
    if args.print:
        print(yaml.safe_dump_all(manifests(), sort_keys=False, width=100), end="")
        return 0
    text = DOC.read_text()
    new = updated(text)
    if args.check:
        if new != text:
            print("docs/operator.md is stale: run scripts/render_example.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
