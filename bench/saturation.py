"""Saturation (issue 17): does draftgen keep a KV-bound server's pool full — better than a
hand-tuned fixed concurrency — on the work the seed had?

The generator's own code (`Runner`, admission, budgets, client, writer) runs against
`bench/kv_server.py`, a simulated server with SGLang's KV accounting and scheduling and a GPU-
like step time (throughput grows with the running batch), in virtual time
(`bench/virtual_time.py`), so a 10M-token budget takes minutes. Clients: draftgen `auto` on the
server as draftgen's operator renders it from the job (`server.scheduleConservativeness` and
the other rendered flags, read back from `operator/render/server.py`'s arguments), draftgen
`fixed` at 16/32/64/150 requests in flight on SGLang's default server (the seed ran 150), and
fixed 150 on draftgen's server too, so a gain from the server's setting shows apart from one
from draftgen's admission. Scenarios: all-short prompts, all 4,000-token coding prompts, and the
seed's mix of eight datasets with different lengths run interleaved. Every client sees the
same samples (lengths drawn per sample id).

    .cache/venv/bin/python bench/saturation.py [--budget 1000000] [--mix-budget 250000]
        [--scenarios short,coding,mix] [--clients auto,16,32,64,150,150@draftgen]
        [--overshoot-budget 10000000] [--sweep 1.0,0.5,0.3,0.1] [--sweep-budget 1000000]

The matrix runs at 1M-token budgets (every client at 10M would take about an hour here);
budget overshoot, which the issue asks at 10M-token budgets, and the steady-state KV usage come
from draftgen alone at `--overshoot-budget` per dataset (the mix: that budget over its eight
datasets): in a 1M-token run the first minutes, while draftgen learns the lengths, are a fifth
of the window. `--sweep`
measures the server lever, `server.scheduleConservativeness`, for draftgen and fixed 150 at the
matrix's budget (a smaller one never saturates the server): the measurement behind the spec's
default.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import virtual_time
from common import BENCH_DIR, Goal, Result
from kv_server import SEED_POOL, KVServer
from saturation_workload import (
    DEFAULT_CONSERVATIVENESS,
    SCENARIOS,
    STORM_PERCENT,
    Client,
    completion_of,
    draw,
    job_for,
    parse_clients,
    scheduler_for,
)


def run_client(
    scenario: str,
    client: Client,
    budget: int,
    pool: int,
    work: Path,
    conservativeness: float | None = None,
) -> dict:
    """One client on a fresh simulated server; `conservativeness` sets the job's
    `server.scheduleConservativeness` (None: the spec's default)."""
    from draftgen.generator.prompts.samples import Sample
    from draftgen.generator.run import Runner, Settings

    shapes = SCENARIOS[scenario]
    job = job_for(shapes, client, budget, conservativeness)
    by_name = {s.name: s for s in shapes}

    def source(dataset, skip, max_prompt):
        shape = by_name[dataset.name]
        for i in range(10 * budget // shape.completion + 10_000):
            prompt, completion = draw(shape, i)
            ids = [completion] + [11] * (prompt - 1)
            yield Sample(f"{shape.name}/row{i}/0", dataset.name, i, 0, ids, {})

    sched = scheduler_for(job, client, pool)
    server = KVServer(completion_of, sched)
    out = work / f"{scenario}-{client.mode}-{client.server}-{conservativeness}"
    settings = Settings(
        servers=["http://simulated"],
        output=out,
        live_progress=False,
        health_timeout=10,
        manifest_interval=3600.0,  # virtual seconds: no fsync storm in a compressed run
        transport=server,
    )

    async def go():
        try:
            return await Runner(job, settings, source).run()
        finally:
            await server.aclose()

    ledgers, seconds = virtual_time.run(go())
    shutil.rmtree(out, ignore_errors=True)
    done = sum(led.completion_tokens for led in ledgers.values())
    over = max(100.0 * (led.completion_tokens - budget) / budget for led in ledgers.values())
    return {
        "done": done,
        "seconds": seconds,
        "over": over,
        "c": sched.schedule_conservativeness,
        "requests": sched.requests_total,
        **steady(server),
        "server": server,
    }


def steady(server: KVServer) -> dict:
    """Time-weighted means while 10–80 % of the work was done (not the start, not the end)."""
    samples = server.readings.samples
    total = samples[-1][4] if samples else 0
    w = [s for s in samples if 0.1 * total <= s[4] <= 0.8 * total]
    if len(w) < 2:
        return {
            "tps": float("nan"),
            "usage": float("nan"),
            "queue": float("nan"),
            "running": 0,
            "reserved": float("nan"),
            "retracted": server.sched.retracted_total,
        }
    span = w[-1][0] - w[0][0]
    usage = queue = running = reserved = 0.0
    for a, b in itertools.pairwise(w):
        dt = b[0] - a[0]
        usage += a[1] * dt
        reserved += a[5] * dt
        running += a[2] * dt
        queue += a[3] * dt
    return {
        "tps": (w[-1][4] - w[0][4]) / span,
        "usage": usage / span,
        "queue": queue / span,
        "running": running / span,
        "reserved": reserved / span,
        "retracted": server.sched.retracted_total,
    }


def _row(scenario: str, client: Client, r: dict, best: float) -> list:
    return [
        scenario,
        client.label,
        f"{r['c']:g}",
        round(r["tps"]),
        round(r["tps"] / best, 3),
        round(r["usage"], 3),
        round(r["running"], 1),
        round(r["queue"], 1),
        r["retracted"],
        round(r["over"], 3),
        round(r["seconds"] / 3600, 1),
    ]


def _usage_goal(scenario: str, a: dict, runs: dict[Client, dict], budget: int) -> Goal:
    """KV usage, queue and retractions of draftgen's run `a` at `budget`-token budgets."""
    fixed = [r for c, r in runs.items() if c.mode != "auto"]
    why = ""
    if a["usage"] < 0.9:
        why = (
            f"draftgen's own limits held it back (expected peak, queue target): used + reserved "
            f"{a['usage'] + a['reserved']:.2f} of the pool"
            if a["usage"] + a["reserved"] < 0.95
            else f"the server's own admission holds the rest back: SGLang reserves "
            f"new_token_ratio × min(maxNewTokens − generated, 4,096) for every running request, "
            f"{a['reserved']:.2f} of the pool on average here, and admits no request whose "
            f"prompt + whole maxNewTokens does not fit beside it (used + reserved "
            f"{a['usage'] + a['reserved']:.2f}); the best fixed client, with a queue "
            f"{max(r['queue'] for r in fixed):.0f} deep, reached "
            f"{max(r['usage'] for r in fixed):.2f}"
        )
    share = 100 * a["retracted"] / max(a["requests"], 1)
    return Goal(
        f"{scenario}: steady-state KV usage ≥ 0.90, short queue, no retraction storm "
        f"({budget:,}-token budgets)",
        f"usage {a['usage']:.3f}, queue {a['queue']:.1f}, {a['retracted']} retractions "
        f"({share:.1f} % of requests)",
        a["usage"] >= 0.9 and a["queue"] <= 0.1 * a["running"] + 4 and share <= STORM_PERCENT,
        why,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=1_000_000, help="completion tokens each")
    parser.add_argument(
        "--mix-budget", type=int, default=0, help="each of the mix's 8 datasets (default: budget/4)"
    )
    parser.add_argument("--scenarios", default="short,coding,mix")
    parser.add_argument("--clients", default="auto,16,32,64,150,150@draftgen")
    parser.add_argument("--pool", type=int, default=SEED_POOL)
    parser.add_argument(
        "--overshoot-budget",
        type=int,
        default=10_000_000,
        help="draftgen alone at this budget per dataset (the mix: in all), for the overshoot; 0: skip",
    )
    parser.add_argument(
        "--sweep",
        default="1.0,0.5,0.3,0.1",
        help="server.scheduleConservativeness values to measure draftgen and fixed 150 at; '': skip",
    )
    parser.add_argument(
        "--sweep-budget",
        type=int,
        default=0,
        help="budget of the sweep's runs (default: budget; smaller ones never saturate the server)",
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    clients = parse_clients(args.clients)
    res = Result(
        "saturation",
        "Saturation: KV-bound server, draftgen auto vs fixed concurrency (simulated GPU server)",
        [
            "scenario",
            "client",
            "server conservativeness",
            "completion tok/s",
            "÷ best fixed",
            "mean KV usage",
            "mean running",
            "mean queue",
            "retractions",
            "overshoot %",
            "virtual hours",
        ],
    )
    work = BENCH_DIR / "saturation"
    shutil.rmtree(work, ignore_errors=True)
    scenarios = args.scenarios.split(",")
    autos: dict[str, dict] = {}
    for scenario in scenarios:
        budget = args.budget if scenario != "mix" else (args.mix_budget or args.budget // 4)
        runs = {c: run_client(scenario, c, budget, args.pool, work) for c in clients}
        # ÷ best fixed: against the hand-tuned fixed clients on SGLang's default server.
        fixed = [r["tps"] for c, r in runs.items() if c.mode != "auto" and c.server == "sglang"]
        best = max(fixed) if fixed else float("nan")
        for c, r in runs.items():
            res.rows.append(_row(scenario, c, r, best))
            print(res.rows[-1], flush=True)
        a = runs.get(Client("auto", "draftgen"))
        if a is None or not fixed:
            continue
        same = runs.get(Client("150", "draftgen"))
        if same is not None:
            # Where a gain comes from: the server's setting (fixed 150 on either server) and
            # draftgen's admission (against fixed 150 on the very same server).
            plain = runs.get(Client("150", "sglang"))
            res.notes.append(
                f"{scenario}: draftgen auto ÷ fixed 150 on the server draftgen renders for a "
                f"fixed-concurrency job (conservativeness {same['c']:g}; draftgen's own runs at "
                f"{a['c']:g}, and the lever table compares both clients at each value): "
                f"{a['tps'] / same['tps']:.3f}"
                + (
                    f"; fixed 150 on that server ÷ on SGLang's default: "
                    f"{same['tps'] / plain['tps']:.3f} (the server's setting alone)"
                    if plain is not None
                    else ""
                )
            )
        autos[scenario] = a
        goal = 1.05 if scenario == "mix" else 1.0
        res.goals.append(
            Goal(
                f"{scenario}: draftgen ÷ best fixed ≥ {goal}",
                f"{a['tps'] / best:.3f}",
                a["tps"] / best >= goal,
            )
        )
        big = args.overshoot_budget
        if big:
            big_budget = big if scenario != "mix" else big // len(SCENARIOS["mix"])
            o = run_client(scenario, Client("auto", "draftgen"), big_budget, args.pool, work)
            # The steady state of a long run: the first minutes, while draftgen learns the
            # lengths (each request counted as maxNewTokens long until 8 have ended), are a
            # small share of it, as on a real job of hours.
            res.goals.append(_usage_goal(scenario, o, runs, big_budget))
            res.goals.append(
                Goal(
                    f"{scenario}: budget overshoot ≤ 1 % ({big_budget:,}-token budgets)",
                    f"{o['over']:.3f} %",
                    o["over"] <= 1.0,
                )
            )
            res.notes.append(
                f"{scenario} at {big_budget:,}-token budgets, draftgen alone: overshoot "
                f"{o['over']:.3f} %, {o['tps']:,.0f} completion tok/s, mean KV usage "
                f"{o['usage']:.3f}, mean queue {o['queue']:.1f}, {o['retracted']} retractions of "
                f"{o['requests']:,} requests, {o['seconds'] / 3600:.1f} virtual hours"
            )
        else:
            res.goals.append(_usage_goal(scenario, a, runs, budget))
            res.goals.append(
                Goal(
                    f"{scenario}: budget overshoot ≤ 1 % ({budget:,}-token budgets)",
                    f"{a['over']:.3f} %",
                    a["over"] <= 1.0,
                )
            )
    if args.sweep:
        _sweep(res, args, scenarios, work)
    shutil.rmtree(work, ignore_errors=True)
    res.notes.append(
        f"Simulated server (bench/kv_server.py): KV pool {args.pool:,} tokens (the seed's, at "
        "mem-fraction 0.88) and SGLang 0.5.23's scheduler as its source has it: a request is "
        "admitted while its prompt + 1 + min(maxNewTokens, 4,096) fits beside "
        "new_token_ratio × min(maxNewTokens − generated, 4,096) of every running request (ratio "
        "0.7 × conservativeness, decaying to a seventh of that over 600 steps), no admission "
        "retried until the batch shrinks, chunked prefill 8,192, decode retraction; step time "
        "35.5 ms + 0.584 ms × running for a decode step (17 tok/s per request at 40 running, "
        "12.9 at 72: the seed's figures), 35.5 ms + 50 µs per token for a prefill step. "
        "Virtual time: hours of decode in seconds."
    )
    res.notes.append(
        "server conservativeness: the server's --schedule-conservativeness; fixed N runs on "
        "SGLang's default server (1.0, the seed's set-up), draftgen auto and the row marked "
        "(draftgen's server) on the server draftgen's operator renders from the job (its "
        "`server.scheduleConservativeness`, read back from the rendered arguments), so a gain "
        "from the server's setting shows apart from one from draftgen's admission. ÷ best fixed: "
        "against the best fixed client on SGLang's default server in the same scenario."
    )
    res.notes.append(
        "completion tok/s (tokens decoded per second, finished or not: a steady rate), KV usage, "
        "running and queue: time-weighted over the steady state (from 10 % to 80 % of the "
        "tokens decoded); overshoot: the worst dataset's completion tokens "
        "over its budget (`finish` policy); retractions: requests the server retracted in the "
        "whole run."
    )
    res.save()


def _sweep(res: Result, args: argparse.Namespace, scenarios: list[str], work: Path) -> None:
    """The server lever: draftgen and fixed 150 at each `server.scheduleConservativeness`."""
    from draftgen.spec.server import SCHEDULE_CONSERVATIVENESS_AUTO, SCHEDULE_CONSERVATIVENESS_FIXED

    values = [float(v) for v in args.sweep.split(",")]
    # The spec's default for each client: auto concurrency, or fixed.
    default = {"auto": SCHEDULE_CONSERVATIVENESS_AUTO, "150": SCHEDULE_CONSERVATIVENESS_FIXED}
    rows = []
    verdicts: list[tuple[str, float, float, float]] = []
    # At a quarter of 1M the server never saturated (mean KV usage 0.25-0.8): no lever to see.
    base = args.sweep_budget or args.budget
    for scenario in scenarios:
        budget = base if scenario != "mix" else base // 4
        ref: dict[str, float] = {}
        for c in values:
            for mode in ("auto", "150"):
                r = run_client(scenario, Client(mode, "draftgen"), budget, args.pool, work, c)
                ref.setdefault(mode, r["tps"])
                if c == default[mode]:
                    share = 100 * r["retracted"] / max(r["requests"], 1)
                    verdicts.append((f"{scenario} {mode}", r["tps"] / ref[mode], share, c))
                rows.append(
                    [
                        scenario,
                        "draftgen auto" if mode == "auto" else "fixed 150",
                        f"{c:g}",
                        round(r["tps"]),
                        round(r["tps"] / ref[mode], 3),
                        round(r["usage"], 3),
                        round(r["queue"], 1),
                        r["retracted"],
                        round(100 * r["retracted"] / max(r["requests"], 1), 2),
                    ]
                )
                print(rows[-1], flush=True)
    res.add_table(
        f"Server lever: server.scheduleConservativeness ({base:,}-token budgets; the mix "
        f"{base // 4:,} each; ÷ first: against the same client at {values[0]:g})",
        [
            "scenario",
            "client",
            "conservativeness",
            "completion tok/s",
            "÷ first",
            "mean KV usage",
            "mean queue",
            "retractions",
            "retracted % of requests",
        ],
        rows,
    )
    if verdicts and values[0] == DEFAULT_CONSERVATIVENESS:
        # The spec's default against SGLang's: no slower for anyone, no retraction storm.
        worst = min(v[1] for v in verdicts)
        most = max(v[2] for v in verdicts)
        res.goals.append(
            Goal(
                f"server.scheduleConservativeness defaults ({default['auto']:g} auto, "
                f"{default['150']:g} fixed): ≥ SGLang's "
                f"{values[0]:g} for draftgen and fixed 150 in every scenario, ≤ "
                f"{STORM_PERCENT:g} % of requests retracted",
                f"worst ÷ {values[0]:g}: {worst:.3f}, most retracted: {most:.1f} %",
                worst >= 0.995 and most <= STORM_PERCENT,
                "each ÷ is a separate run of the same samples; ±0.5 % is the noise of where "
                "the steady-state window falls, and the lever shows only where the server "
                "saturates (a run whose mean KV usage stays low measures nothing)",
            )
        )


if __name__ == "__main__":
    main()
