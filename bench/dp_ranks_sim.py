"""The seed's work on the seed's machine, at plain TP 8 against data-parallel attention (issue
28), simulated: decodes in flight and completion tok/s per layout.

The generator's own code (`Runner`, per-rank admission, budgets) runs against
`bench/dp_kv_server.py` (d `KVScheduler`s, SGLang's dispatch rules, the ranks stepping
together) in virtual time, on the seed's mix of eight datasets (`saturation_workload.SCENARIOS`).
Pools per rank are the planner's for 8 × RTX PRO 6000, Kimi-K2.5, memFractionStatic 0.88, bf16
KV (docs/capacity-planning.md, section 6: `draftgen plan examples/kimi-k2.5.yaml`), with the
attention weights each GPU then holds:

| layout | pool per rank | GiB of weights per GPU |
|---|---|---|
| TP 8 | 159,294 | 72.33 |
| DP-attn 2 | 134,636 | 72.33 + 1.61 |
| DP-attn 4 (the planner's best lossless) | 85,320 | 72.33 + 4.84 |

Step time (the assumption, in the table): plain TP's `a + b × running` from the seed's figures
(17 tok/s per request at 40 running, 12.9 at 72); at d > 1 `a × weights-per-GPU ratio +
b × d × the busiest rank's running` (every GPU reads its larger share of attention weights each
step; the batch is padded to the busiest rank); a prefill on one rank is a forward for all, the
other ranks decoding a step in it. SGLang multiplies schedule_conservativeness by
0.3 under DP attention (`parallel_hook.handle_data_parallelism`): applied.

    .cache/venv/bin/python bench/dp_ranks_sim.py [--budget 300000] [--layouts tp8,dp2,dp4]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import virtual_time
from common import BENCH_DIR, Goal, Result
from dp_kv_server import DPKVServer
from kv_scheduler import STEP_A, STEP_B, KVScheduler
from saturation_workload import SCENARIOS, Client, completion_of, draw, job_for

WEIGHTS_GIB = 72.33
DP_ATTENTION_CONSERVATIVENESS = 0.3


@dataclass(frozen=True)
class Layout:
    name: str
    ranks: int
    pool: int
    extra_gib: float = 0.0

    @property
    def weight_factor(self) -> float:
        return (WEIGHTS_GIB + self.extra_gib) / WEIGHTS_GIB


LAYOUTS = {
    "tp8": Layout("TP 8", 1, 159_294),
    "dp2": Layout("DP-attn 2", 2, 134_636, 1.61),
    "dp4": Layout("DP-attn 4", 4, 85_320, 4.84),
}


@dataclass(frozen=True)
class Run:
    layout: Layout
    client: Client
    dispatch: str
    """"draftgen" (requests pinned per rank) or SGLang's load-balance method."""


def run_one(run: Run, budget: int, work: Path) -> dict:
    from draftgen.generator.prompts.samples import Sample
    from draftgen.generator.run import Runner, Settings

    shapes = SCENARIOS["mix"]
    job = job_for(shapes, run.client, budget, None)
    by_name = {s.name: s for s in shapes}

    def source(dataset, skip, max_prompt):
        shape = by_name[dataset.name]
        for i in range(10 * budget // shape.completion + 10_000):
            prompt, completion = draw(shape, i)
            yield Sample(
                f"{shape.name}/row{i}/0", dataset.name, i, 0, [completion] + [11] * (prompt - 1), {}
            )

    c = job.spec.server.schedule_conservativeness
    if c is None:
        c = 0.1 if run.client.mode == "auto" else 0.5
    if run.layout.ranks > 1:
        c *= DP_ATTENTION_CONSERVATIVENESS
    server = DPKVServer(
        completion_of,
        [
            KVScheduler(run.layout.pool, schedule_conservativeness=c)
            for _ in range(run.layout.ranks)
        ],
        method="round_robin" if run.dispatch == "draftgen" else run.dispatch,
        weight_factor=run.layout.weight_factor,
        honour_routing=run.dispatch == "draftgen",
    )
    out = work / f"{run.layout.name}-{run.client.mode}-{run.dispatch}".replace(" ", "")
    settings = Settings(
        servers=["http://simulated"],
        output=out,
        live_progress=False,
        health_timeout=10,
        manifest_interval=3600.0,
        transport=server,
    )

    async def go():
        try:
            return await Runner(job, settings, source).run()
        finally:
            await server.aclose()

    ledgers, seconds = virtual_time.run(go())
    shutil.rmtree(out, ignore_errors=True)
    return {**steady(server), "seconds": seconds, "routed": server.routed, "server": server}


def steady(server: DPKVServer) -> dict:
    """Time-weighted means while 10–80 % of the work was decoded."""
    s = server.samples
    total = s[-1][4] if s else 0
    w = [x for x in s if 0.1 * total <= x[4] <= 0.8 * total]
    d = len(server.ranks)
    if len(w) < 2:
        nan = float("nan")
        return {"tps": nan, "running": nan, "usage": [nan] * d, "queue": nan, "retracted": 0}
    span = w[-1][0] - w[0][0]
    usage = [0.0] * d
    running = queue = 0.0
    for a, b in itertools.pairwise(w):
        dt = b[0] - a[0]
        for i in range(d):
            usage[i] += a[1][i] * dt
        running += sum(a[2]) * dt
        queue += sum(a[3]) * dt
    return {
        "tps": (w[-1][4] - w[0][4]) / span,
        "running": running / span,
        "usage": [u / span for u in usage],
        "queue": queue / span,
        "retracted": sum(r.retracted_total for r in server.ranks),
    }


def step_text(layout: Layout) -> str:
    a = STEP_A * layout.weight_factor * 1000
    if layout.ranks == 1:
        return f"{a:.1f} ms + {STEP_B * 1e6:.0f} µs × running"
    return f"{a:.1f} ms + {STEP_B * 1e6:.0f} µs × {layout.ranks} × busiest rank's running"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=300_000, help="completion tokens per dataset")
    ap.add_argument("--layouts", default="tp8,dp2,dp4")
    ap.add_argument(
        "--sglang-dispatch",
        default="round_robin",
        help="also run the seed's fixed 150 on the largest d with SGLang's own dispatch "
        "(comma-separated methods; empty: none)",
    )
    args = ap.parse_args()
    layouts = [LAYOUTS[k] for k in args.layouts.split(",")]
    runs = [Run(lay, Client("auto", "draftgen"), "draftgen") for lay in layouts]
    widest = max(layouts, key=lambda lay: lay.ranks)
    if widest.ranks > 1:
        runs += [
            Run(widest, Client("150"), method)
            for method in args.sglang_dispatch.split(",")
            if method
        ]
    work = BENCH_DIR / "dp-ranks-sim"
    shutil.rmtree(work, ignore_errors=True)
    result = Result(
        "dp_ranks_sim",
        "The seed's mix at TP 8 and at data-parallel attention (simulated)",
        [
            "layout",
            "client",
            "dispatch",
            "pool per rank",
            "server tokens",
            "step time (assumed)",
            "decodes in flight",
            "completion tok/s",
            "KV usage per rank (min–max)",
            "queued",
            "retracted",
        ],
    )
    measured = {}
    try:
        for run in runs:
            r = run_one(run, args.budget, work)
            measured[run] = r
            usage = r["usage"]
            result.rows.append(
                [
                    run.layout.name,
                    "draftgen auto" if run.client.mode == "auto" else f"fixed {run.client.mode}",
                    "draftgen per rank" if run.dispatch == "draftgen" else f"SGLang {run.dispatch}",
                    run.layout.pool,
                    run.layout.pool * run.layout.ranks,
                    step_text(run.layout),
                    round(r["running"], 1),
                    round(r["tps"]),
                    f"{min(usage):.2f}–{max(usage):.2f}",
                    round(r["queue"], 1),
                    r["retracted"],
                ]
            )
            print(result.rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = next((m for run, m in measured.items() if run.layout.ranks == 1), None)
    ours = {run: m for run, m in measured.items() if run.dispatch == "draftgen"}
    if base is not None and len(ours) > 1:
        best_run, best = max(ours.items(), key=lambda kv: kv[1]["tps"])
        result.goals.append(
            Goal(
                "the best data-parallel layout decodes more at once and faster than TP 8",
                f"{best_run.layout.name}: {best['running']:.0f} decodes, {best['tps']:.0f} tok/s "
                f"vs TP 8: {base['running']:.0f}, {base['tps']:.0f} tok/s "
                f"(×{best['tps'] / base['tps']:.2f})",
                best["tps"] > base["tps"],
            )
        )
        rr = [m for run, m in measured.items() if run.dispatch != "draftgen"]
        per_rank = [m for run, m in ours.items() if run.layout.ranks > 1]
        if per_rank:
            spread = max(max(m["usage"]) - min(m["usage"]) for m in per_rank)
            result.goals.append(
                Goal(
                    "draftgen keeps every rank's pool alike (KV usage within 0.1 of each other)",
                    f"largest spread {spread:.2f}"
                    + (
                        f"; SGLang's own dispatch with the seed's fixed 150: "
                        f"{max(max(m['usage']) - min(m['usage']) for m in rr):.2f}"
                        if rr
                        else ""
                    ),
                    spread <= 0.1,
                )
            )
    result.notes.append(
        f"Budget {args.budget:,} completion tokens per dataset of the seed's mix (8 datasets). "
        "Pools per rank and weights per GPU: the planner's (docs/capacity-planning.md §6), a "
        "plan, not a measurement. Step time at d > 1 is an assumption (the column): every GPU "
        "reads its larger share of attention weights each step, the ranks step together with "
        "the batch padded to the busiest rank, and a prefill on one rank is a forward in which "
        "the others decode. SGLang's schedule_conservativeness × 0.3 under DP attention. "
        "Steady state: 10–80 % of the decoded tokens."
    )
    result.save()


if __name__ == "__main__":
    main()
