"""Operator (issue 7, benchmark 6): reconcile 50 GenerationJobs at once against the Kubernetes
emulator (`tests/operator/emulator/`: kmock's emulator with the bookkeeping a real API server
does), with the real operator code running as `kopf run` would (kopf's KopfRunner).

Each job goes through its whole life: created → server Deployment and Service → (the server
is marked ready, as a kubelet would) → generator ConfigMap and Job → (the Job is marked
complete) → Succeeded, server torn down. Reported: the operator's Kubernetes API requests per
job (by verb), and the latency of each step (p50 / p95 / max), timed from the emulator's log of
requests (when each change arrived, when the operator's answering write arrived).

What bounds the latency: the job's creation is a watch event, handled at once. A change of a
child (server ready, generator done) is seen on the job's next poll (`pollIntervalSeconds`,
default 15 s), so it waits up to one interval: the benchmark makes each job's change at its own
moment, spread evenly over one interval after the operator's previous step (kubelets report
readiness with no regard to the operator's timer), so that wait is uniform, p50 about half an
interval and max about one. "of which the reconcile" is the rest: from the first API request
of the reconcile that acted to its write, with the other jobs' reconciles competing for kopf's
worker threads, the emulator and the GIL (all in this one process, as in the operator tests).

    .cache/venv/bin/python bench/operator_reconcile.py [--jobs 50] [--poll 15]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # the repository root: tests.operator's harness

from common import Goal, Result  # noqa: E402

OPERATOR_AGENTS = ("kopf/", "draftgen-operator")


def _quantiles(values: list[float]) -> tuple[float, float, float]:
    v = sorted(values)
    return (statistics.median(v), v[min(len(v) - 1, int(0.95 * len(v)))], v[-1])


def drive(cluster, names: list[str], poll: float, timeout: float) -> None:
    """Play kubelet and Job controller for every job, each at its own moment: mark a job's
    server ready, and later its generator complete, `offset` seconds after the operator made
    it, the offsets spread evenly over one poll interval. Reads the emulator's store directly
    (no HTTP), so the waiting costs the emulator nothing."""
    offsets = {n: (i + 0.5) / len(names) * poll for i, n in enumerate(names)}
    ns = cluster.ns
    server_due: dict[str, float] = {}
    finish_due: dict[str, float] = {}
    ready: set[str] = set()
    finished: set[str] = set()
    deadline = time.time() + timeout
    while True:
        deployments = set(cluster.emu.stored("deployments", ns))
        jobs = set(cluster.emu.stored("jobs", ns))
        succeeded = set(
            cluster.emu.stored(
                "generationjobs",
                ns,
                lambda o: (
                    o["metadata"]["name"]
                    if (o.get("status") or {}).get("phase") == "Succeeded"
                    else None
                ),
            )
        )
        now = time.time()
        for n in names:
            if f"{n}-server-0" in deployments and n not in server_due:
                server_due[n] = now + offsets[n]
            if n not in ready and n in server_due and now >= server_due[n]:
                cluster.server_ready(n)
                ready.add(n)
            if f"{n}-generator" in jobs and n not in finish_due:
                finish_due[n] = now + offsets[n]
            if n not in finished and n in finish_due and now >= finish_due[n]:
                cluster.finish_generator(n)
                finished.add(n)
        left = [n for n in names if n not in succeeded or f"{n}-server-0" in deployments]
        if not left:
            return
        if now > deadline:
            raise SystemExit(
                f"timed out: {len(left)} jobs not Succeeded with the server torn "
                f"down, e.g. {left[:3]}"
            )
        time.sleep(0.05)


def step_times(requests: list[dict], names: list[str]) -> dict[str, dict[str, float]]:
    """When each change arrived at the API server, per job, from the emulator's request log."""
    out: dict[str, dict[str, float]] = collections.defaultdict(dict)
    last_read: dict[
        str, float
    ] = {}  # the operator's latest fresh read of the job (a reconcile starts)
    wanted = set(names)

    def first(job: str, key: str, t: float) -> None:
        if job in wanted:
            out[job].setdefault(key, t)

    for r in requests:
        t, name, plural, action = r["time"], r["name"] or "", r["plural"], r["action"]
        by_operator = r["agent"].startswith(OPERATOR_AGENTS)
        data = r["data"] if isinstance(r["data"], dict) else {}
        if plural == "generationjobs" and action == "create" and not by_operator:
            first(name, "created", t)
        elif (
            plural == "generationjobs"
            and action == "fetch"
            and r["agent"].startswith("draftgen-operator")
        ):
            last_read[name] = t
        elif plural == "deployments" and action == "create" and by_operator:
            first(name.removesuffix("-server-0"), "server", t)
        elif plural == "deployments" and r["subresource"] == "status" and not by_operator:
            first(name.removesuffix("-server-0"), "ready", t)
        elif plural == "jobs" and action == "create" and by_operator:
            job = name.removesuffix("-generator")
            first(job, "generator", t)
            first(job, "generator_reconcile", last_read.get(job, t))
        elif plural == "jobs" and r["subresource"] == "status" and not by_operator:
            first(name.removesuffix("-generator"), "finished", t)
        elif (
            plural == "generationjobs"
            and r["subresource"] == "status"
            and by_operator
            and (data.get("status") or {}).get("phase") == "Succeeded"
        ):
            first(name, "succeeded", t)
            first(name, "succeeded_reconcile", last_read.get(name, t))
        elif plural == "deployments" and action == "delete" and by_operator:
            first(name.removesuffix("-server-0"), "torn", t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument(
        "--poll", type=float, default=15.0, help="pollIntervalSeconds of the operator"
    )
    args = parser.parse_args()
    # The test fixtures' settings, read when the handlers are first imported; then ours.
    from tests.operator.emulator import EmulatorThread
    from tests.operator.harness import (
        _KUBECONFIG,
        Cluster,
        example_job,
        running_operator,
        set_operator_test_env,
    )

    set_operator_test_env()

    from draftgen.controller import metrics

    os.environ["DRAFTGEN_OPERATOR_POLL_INTERVAL_SECONDS"] = str(args.poll)
    res = Result(
        "operator_reconcile",
        f"Operator: {args.jobs} GenerationJobs reconciled at once (Kubernetes emulator)",
        ["step", "p50 s", "p95 s", "max s"],
    )
    emu = EmulatorThread(_KUBECONFIG.parent, kubeconfig=_KUBECONFIG).start()
    started = time.time()
    try:
        cluster = Cluster(emu, "bench")
        names = [f"job-{i:03d}" for i in range(args.jobs)]
        with running_operator():
            for n in names:
                job = example_job(cluster.ns, name=n)
                job["spec"]["datasets"] = job["spec"]["datasets"][:2]
                cluster.apply(job)
            drive(cluster, names, args.poll, timeout=120 + 6 * args.poll)
        requests = emu.requests()
    finally:
        emu.stop()
    wall = time.time() - started

    times = step_times(requests, names)
    steps = [
        ("created → server Deployment (watch event)", "created", "server"),
        ("server ready → generator Job (next poll)", "ready", "generator"),
        (
            "  of which the reconcile (its first request → the Job)",
            "generator_reconcile",
            "generator",
        ),
        ("generator complete → phase Succeeded (next poll)", "finished", "succeeded"),
        (
            "  of which the reconcile (its first request → the status)",
            "succeeded_reconcile",
            "succeeded",
        ),
        ("generator complete → server torn down", "finished", "torn"),
    ]
    for label, a, b in steps:
        res.rows.append(
            [label, *[round(x, 2) for x in _quantiles([times[n][b] - times[n][a] for n in names])]]
        )

    ours = [r for r in requests if r["agent"].startswith(OPERATOR_AGENTS)]
    by_verb = collections.Counter(r["action"] for r in ours)
    by_kind = collections.Counter(
        f"{r['action']} {r['plural']}{'/' + r['subresource'] if r['subresource'] else ''}"
        for r in ours
    )
    per_job = len(ours) / args.jobs
    res.add_table(
        "Operator API requests per job (whole life; watches and lists shared)",
        ["request", "per job"],
        [[k, round(v / args.jobs, 2)] for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])]
        + [["all", round(per_job, 1)]],
    )
    histogram = "draftgen_operator_reconcile_duration_seconds"  # the operator's own metric
    count = metrics.REGISTRY.get_sample_value(f"{histogram}_count") or 0
    total = metrics.REGISTRY.get_sample_value(f"{histogram}_sum") or 0
    mean_ms = 1000 * total / count if count else float("nan")
    res.goals.append(
        Goal(
            "API requests per job and reconcile latency reported (no target set)",
            f"{per_job:.1f} requests per job; created → server p50 "
            f"{res.rows[0][1]:.2f} s; a reconcile takes {mean_ms:.0f} ms on "
            "average",
            None,
            "the issue sets no figure: this is a measurement",
        )
    )
    res.notes.append(
        f"{args.jobs} jobs created back to back (examples/kimi-k2.5.yaml, two datasets each); "
        f"pollIntervalSeconds {args.poll:g}; each job's server readiness and generator "
        f"completion come at their own moment, spread evenly over one poll interval after the "
        f"operator's previous step, so a step seen on the next poll waits up to one interval "
        f"(p50 about half): that wait, not the operator's work, bounds those rows. The operator's "
        f"own histogram: {int(count)} reconciles, {mean_ms:.0f} ms each on average. "
        f"Whole run {wall:.0f} s. By verb: "
        + ", ".join(f"{k} {v / args.jobs:.1f}" for k, v in by_verb.most_common())
        + "."
    )
    res.notes.append(
        "The emulator, kopf and the operator share one Python process (and its "
        "GIL), as in the operator tests."
    )
    res.save()


if __name__ == "__main__":
    main()
