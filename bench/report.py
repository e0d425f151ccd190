"""Write `docs/benchmarks.md` from the results the benchmarks left in `.cache/bench/results/`
(`bench/run_all.sh` calls it last). Everything in the document comes from those files: the
tables, the commands, the machine facts and the verdict on every goal.

    .cache/venv/bin/python bench/report.py [--total-seconds N] [--failed "names"]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, RESULTS, machine, markdown_table

ORDER = [
    "vs_standard_client",
    "budget_precision",
    "client_cost",
    "pretokenize",
    "resume_cost",
    "operator_reconcile",
    "saturation",
    "saturation_real",
    "saturation_real_32k",
    "dp_ranks_real",
    "dp_ranks_sim",
]
SCRIPTS = {
    "vs_standard_client": "vs_standard_client.py",
    "budget_precision": "budget_precision.py",
    "client_cost": "client_cost.py",
    "pretokenize": "pretokenize_rate.py",
    "resume_cost": "resume_cost.py",
    "operator_reconcile": "operator_reconcile.py",
    "saturation": "saturation.py",
    "saturation_real": "saturation_real.py",
    "saturation_real_32k": "saturation_real.py",
    "dp_ranks_real": "dp_ranks_real.py",
    "dp_ranks_sim": "dp_ranks_sim.py",
}
VERDICT = {True: "met", False: "**not met**", None: "not measured"}


def anchor(name: str) -> str:
    return name.replace("_", "-")


def goal_rows(name: str, r: dict) -> list[str]:
    return [
        f"| [{r['title'].split(':')[0]}](#{anchor(name)}) | {g['goal']} | "
        f"{g['measured']} | {VERDICT[g['met']]} |"
        for g in r["goals"]
    ]


def section(name: str, r: dict) -> list[str]:
    """One benchmark's section: command, time and load, its tables, goals and notes."""
    mach = r["machine"]
    out = [
        "",
        f'<a id="{anchor(name)}"></a>',
        f"## {r['title']}",
        "",
        f"```\n{r['command']}\n```",
        "",
        f"{r['seconds']} s; load average {mach['loadavg']} at the start, "
        f"{mach.get('loadavg_end')} at the end ({mach.get('date', '?')}, commit "
        f"`{mach.get('commit', '?')}`).",
        "",
        markdown_table(r["columns"], r["rows"]),
    ]
    for t in r.get("extra_tables", []):
        out += ["", f"**{t['title']}**", "", markdown_table(t["columns"], t["rows"])]
    if r["goals"]:
        out += ["", "Goals:", ""]
        for g in r["goals"]:
            line = f"- {g['goal']}: {g['measured']} — {VERDICT[g['met']]}"
            if g.get("why"):
                line += f". {g['why'][0].upper()}{g['why'][1:]}."
            out.append(line)
    if r["notes"]:
        out += [""] + [f"- {n}" for n in r["notes"]]
    out += ["", f"Source: [`bench/{SCRIPTS[name]}`](../bench/{SCRIPTS[name]})."]
    return out


def update(doc: Path, name: str, r: dict) -> None:
    """Replace (or add) one benchmark's goal rows and section in an existing document, from a
    run of that benchmark alone; the rest of the document stays as its last `make bench` left
    it."""
    lines = doc.read_text().splitlines()
    link = f"](#{anchor(name)})"
    rows = [i for i, line in enumerate(lines) if line.startswith("| [") and link in line]
    table_end = max(i for i, line in enumerate(lines) if line.startswith("| ["))
    at = rows[0] if rows else table_end + 1
    lines = [line for i, line in enumerate(lines) if i not in rows]
    lines[at:at] = goal_rows(name, r)
    start = next((i for i, x in enumerate(lines) if x == f'<a id="{anchor(name)}"></a>'), None)
    if start is None:
        start = next((i for i, x in enumerate(lines) if x == "## Not run"), len(lines))
        end = start
    else:
        end = next(
            (
                i
                for i in range(start + 1, len(lines))
                if lines[i].startswith(("<a id=", "## Not run"))
            ),
            len(lines),
        )
        start -= 1  # the blank line before the anchor
    new = section(name, r)
    if end < len(lines):
        new.append("")
    lines[start:end] = new
    doc.write_text("\n".join(lines) + "\n")
    print(f"updated {doc} with {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total-seconds", type=float, default=None)
    parser.add_argument("--failed", default="")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "benchmarks.md")
    parser.add_argument(
        "--update",
        default=None,
        metavar="NAME",
        help="replace only this benchmark's rows and section in the existing document",
    )
    args = parser.parse_args()
    if args.update:
        update(args.output, args.update, json.loads((RESULTS / f"{args.update}.json").read_text()))
        return
    results = {}
    for name in ORDER:
        path = RESULTS / f"{name}.json"
        if path.exists():
            results[name] = json.loads(path.read_text())
    m = machine()
    first = next(iter(results.values()), {}).get("machine", m)
    out = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`bench/run_all.sh`, then `bench/report.py`) from the run "
        "below; do not edit by hand — run it again. Benchmarks are not tests: no figure here "
        "gates CI. This machine is shared and noisy (other engineers' test suites run on the same "
        "2 cores), so every comparison is measured side by side in the same run and reported "
        "as a ratio; absolute figures only say what this machine did at that moment.",
        "",
        f"- Run: {first.get('date', '?')}, commit `{first.get('commit', '?')}` (plus the working "
        f"tree), Python {first.get('python', '?')}",
        f"- Machine: `nproc` = {first.get('nproc')}, {first.get('cpu') or 'CPU unknown'}; load "
        "average (1, 5, 15 min) at the start and end of each benchmark in its section",
    ]
    if args.total_seconds is not None:
        out.append(
            f"- `make bench` took {args.total_seconds / 60:.1f} minutes in all "
            f"(budget: 15 minutes on 2 cores)"
        )
    failed = [f for f in args.failed.split() if f]
    if failed:
        out.append(f"- Crashed (no results): {', '.join(failed)}")
    out += ["", "## Goals", "", "| benchmark | goal | measured | verdict |", "|---|---|---|---|"]
    for name, r in results.items():
        out += goal_rows(name, r)
    out.append("")
    out.append(
        "Where a goal is not met, its section says why (each figure there was measured, "
        "not estimated)."
    )
    for name, r in results.items():
        out += section(name, r)
    missing = [n for n in ORDER if n not in results]
    if missing:
        out += ["", "## Not run", "", "No results for: " + ", ".join(missing) + "."]
    args.output.write_text("\n".join(out) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
