"""docs/metrics.md's tables, generated from the metric definitions in `metrics.py`.

    python -m draftgen.contract.metrics_doc            # rewrite the generated part (make metrics-doc)
    python -m draftgen.contract.metrics_doc --check    # exit 1 if docs/metrics.md is stale

Only the text between the markers is generated; the prose around it is written by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

from . import metrics

BEGIN = "<!-- BEGIN generated (make metrics-doc, from draftgen/contract/metrics.py) -->"
END = "<!-- END generated -->"
DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


class StaleDoc(DraftgenError):
    """docs/metrics.md's generated part differs from the definitions."""

    exit_code = ExitCode.INVALID
    fix = "regenerate docs/metrics.md from draftgen/contract/metrics.py"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def section() -> str:
    """The generated part, markers included."""
    job = ", ".join(f"`{label}`" for label in metrics.JOB_LABELS)
    lines = [
        BEGIN,
        "",
        f"Every series also carries {job} (see above).",
        "",
        "| metric | type | labels | meaning |",
        "|---|---|---|---|",
    ]
    for m in metrics.ALL:
        meaning = m.help + (f"; {m.note}" if m.note else "")
        labels = ", ".join(m.labels)
        lines.append(f"| `{m.name}` | {m.type} | {labels} | {_cell(meaning)} |")
    lines += [
        "",
        "Reject reasons (`reason` of `draftgen_rejects_total` and of rejects records):",
        "",
    ]
    lines += [f"- `{r.value}`" for r in metrics.RejectReason]
    lines += ["", END]
    return "\n".join(lines)


def render(current: str) -> str:
    """`current` with its generated part replaced."""
    try:
        head, rest = current.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
    except ValueError:
        raise StaleDoc(f"{DOC.name} has no {BEGIN!r} ... {END!r} section") from None
    return head + section() + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is stale")
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    current = args.doc.read_text()
    try:
        wanted = render(current)
    except StaleDoc as err:
        print(err, file=sys.stderr)
        return 1
    if args.check:
        if wanted != current:
            print(f"{args.doc} is stale: run `make metrics-doc`", file=sys.stderr)
            return 1
        return 0
    args.doc.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
