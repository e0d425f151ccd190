"""Operator (issue 7, benchmark 6): reconcile 50 GenerationJobs at once against the Kubernetes
emulator (`tests/operator/emulator.py`: kmock's emulator with the metadata bookkeeping a real
API server does), with the operator running as `kopf run` would (kopf's KopfRunner).

Each job goes through its whole life: created → server Deployment and Service → (the server
is marked ready, as a kubelet would) → generator ConfigMap and Job → (the Job is marked
complete) → Succeeded, server torn down. Reported: the operator's Kubernetes API requests per
job (by verb), and the latency of each step as seen from outside (p50 / p95 / max). Steps that
follow a change of a child object are picked up by the operator's poll timer, so their latency
is bounded by `pollIntervalSeconds` (the default, 15 s; at 1-5 s, 50 jobs saturated the
in-process emulator and every step took minutes). The emulator, kopf
and the operator share this one Python process (and its GIL), as in the operator tests.

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
sys.path.insert(0, str(HERE.parent / "tests" / "operator"))

from common import Goal, Result  # noqa: E402


def _quantiles(values: list[float]) -> tuple[float, float, float]:
    v = sorted(values)
    return (statistics.median(v), v[min(len(v) - 1, int(0.95 * len(v)))], v[-1])


def wait_all(names: list[str], present, timeout: float) -> dict[str, float]:
    """Poll until every name is in `present()` (a set, from one list request: a GET per job
    and round would load the emulator more than the operator does); when each first was."""
    seen: dict[str, float] = {}
    deadline = time.time() + timeout
    while len(seen) < len(names):
        if time.time() > deadline:
            missing = [n for n in names if n not in seen]
            raise SystemExit(f"timed out; still waiting for {len(missing)} jobs, e.g. {missing[:3]}")
        try:
            now_present = present()
        except Exception:  # noqa: BLE001 - a list during a write: look again
            now_present = set()
        now = time.time()
        for n in names:
            if n not in seen and n in now_present:
                seen[n] = now
        time.sleep(0.1)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--poll", type=float, default=15.0, help="pollIntervalSeconds of the operator")
    args = parser.parse_args()
    # The test fixtures' settings, read when the handlers are first imported; then ours.
    import conftest  # noqa: F401  (sets KUBECONFIG and the operator's environment)
    from conftest import APPS, BATCH, GJ, _KUBECONFIG, Cluster, example_job, running_operator
    from emulator import EmulatorThread

    os.environ["DRAFTGEN_OPERATOR_POLL_INTERVAL_SECONDS"] = str(args.poll)
    res = Result("operator_reconcile",
                 f"Operator: {args.jobs} GenerationJobs reconciled at once (Kubernetes emulator)",
                 ["step", "p50 s", "p95 s", "max s"])
    emu = EmulatorThread(_KUBECONFIG.parent, kubeconfig=_KUBECONFIG).start()
    try:
        cluster = Cluster(emu, "bench")
        names = [f"job-{i:03d}" for i in range(args.jobs)]
        with running_operator():
            created = {}
            for n in names:
                job = example_job(cluster.ns, name=n)
                job["spec"]["datasets"] = job["spec"]["datasets"][:2]
                created[n] = time.time()
                cluster.apply(job)
            def jobs_with(api: str, plural: str, suffix: str) -> set[str]:
                return {o["metadata"]["name"][:-len(suffix)] for o in emu.list(api, plural, cluster.ns)
                        if o["metadata"]["name"].endswith(suffix)}

            def phases(phase: str) -> set[str]:
                return {o["metadata"]["name"] for o in emu.list(GJ, "generationjobs", cluster.ns)
                        if (o.get("status") or {}).get("phase") == phase}

            server = wait_all(names, lambda: jobs_with(APPS, "deployments", "-server-0"), 300)
            ready = {}
            for n in names:
                cluster.server_ready(n)
                ready[n] = time.time()
            generator = wait_all(names, lambda: jobs_with(BATCH, "jobs", "-generator"), 300)
            finished = {}
            for n in names:
                cluster.finish_generator(n)
                finished[n] = time.time()
            succeeded = wait_all(names, lambda: phases("Succeeded"), 300)
            torn = wait_all(names, lambda: set(names) - jobs_with(APPS, "deployments", "-server-0"), 300)
        requests = [r for r in emu.requests() if r["agent"].startswith(("kopf/", "draftgen-operator"))]
    finally:
        emu.stop()

    steps = [
        ("created → server Deployment (event-driven)", created, server),
        ("server ready → generator Job (poll timer)", ready, generator),
        ("generator complete → phase Succeeded (poll timer)", finished, succeeded),
        ("generator complete → server torn down", finished, torn),
    ]
    for label, a, b in steps:
        res.rows.append([label, *[round(x, 2) for x in _quantiles([b[n] - a[n] for n in names])]])
    by_verb = collections.Counter(r["action"] for r in requests)
    by_kind = collections.Counter(
        f"{r['action']} {r['plural']}{'/' + r['subresource'] if r['subresource'] else ''}"
        for r in requests)
    per_job = len(requests) / args.jobs
    res.add_table("Operator API requests per job (whole life; watches and lists shared)",
                  ["request", "per job"],
                  [[k, round(v / args.jobs, 2)] for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])]
                  + [["all", round(per_job, 1)]])
    res.goals.append(Goal("API requests per job and reconcile latency reported (no target set)",
                          f"{per_job:.1f} requests per job; created → server p50 "
                          f"{res.rows[0][1]:.2f} s", None,
                          "the issue sets no figure: this is a measurement"))
    res.notes.append(f"{args.jobs} jobs created back to back (examples/kimi-k2.5.yaml, two datasets "
                     f"each); pollIntervalSeconds {args.poll}; by verb: "
                     + ", ".join(f"{k} {v / args.jobs:.1f}" for k, v in by_verb.most_common()) + ".")
    res.save()


if __name__ == "__main__":
    main()
