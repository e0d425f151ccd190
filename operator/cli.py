"""`draftgen operator`: run the kopf operator with draftgen's handlers.

    draftgen operator --all-namespaces --liveness http://0.0.0.0:8081/healthz
    draftgen operator --namespace drafters --standalone
    draftgen operator --render examples/kimi-k2.5.yaml     # what it would create, then exit

Every option can also come from `DRAFTGEN_OPERATOR_*` env vars (operator/settings.py); options
given here win. With explicit `--namespace` names kopf's scanning is disabled (handlers/startup.py),
so the operator needs no access to namespaces or CRDs (and the test emulator's `GET
/api/v1/namespaces` URL-parsing bug is not hit).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import time

from .settings import ENV_PREFIX


def add_arguments(parser: argparse.ArgumentParser) -> None:
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="watch this namespace (repeatable; globs allowed)",
    )
    scope.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="watch every namespace (the default when no --namespace is given)",
    )
    parser.add_argument(
        "--standalone", action="store_true", help="no peering: run as the only operator replica"
    )
    parser.add_argument("--peering", metavar="NAME", help="kopf peering name (leader election)")
    parser.add_argument(
        "--liveness",
        metavar="URL",
        help="serve kopf's liveness probe, e.g. http://0.0.0.0:8081/healthz",
    )
    parser.add_argument("--metrics-port", type=int, help="the operator's own /metrics port")
    parser.add_argument("--verbose", action="store_true", help="debug logging")
    parser.add_argument(
        "--render",
        metavar="JOB.yaml",
        help="print the objects the operator would create for this "
        "GenerationJob (with the operator's settings) and exit",
    )


def render(path: str) -> int:
    """Print every object the operator would create for a job file, or why it would refuse."""
    import sys

    import yaml

    from draftgen.spec import SpecError, load_job

    from .render import render_all
    from .settings import OperatorSettings
    from .validate import check

    try:
        job = load_job(path)
    except SpecError as err:
        print(err, file=sys.stderr)
        return 1
    with open(path, encoding="utf-8") as f:  # the spec exactly as written: unset stays unset
        spec = next(
            d
            for d in yaml.safe_load_all(f)
            if isinstance(d, dict) and d.get("kind") == "GenerationJob"
        )["spec"]
    settings = OperatorSettings.from_env()
    _, problems = check(job.metadata.name, spec, settings)
    if problems:
        print(
            "the operator would reject this job:\n" + "\n".join(f"  - {p}" for p in problems),
            file=sys.stderr,
        )
        return 1
    objs = render_all(job.metadata.name, job.metadata.namespace or "default", spec, settings)
    print(yaml.safe_dump_all(objs, sort_keys=False, width=100), end="")
    return 0


def peering_priority() -> int:
    """This replica's kopf peering priority: distinct per replica, higher for older ones.

    kopf pauses *every* operator that sees a live peer of the same priority, so kopf's default
    (0 for all) would leave no replica working. Older replicas win, so a new pod (a rollout, a
    rescheduled standby) waits instead of taking over; when the active one stops, the oldest
    standby resumes once its keep-alive expires."""
    return -(time.time_ns() // 1000)


def run(args: argparse.Namespace) -> int:
    if args.render:
        return render(args.render)
    # Options become settings before the handlers module reads them at import.
    if args.standalone:
        os.environ[ENV_PREFIX + "STANDALONE"] = "1"
    if args.peering:
        os.environ[ENV_PREFIX + "PEERING_NAME"] = args.peering
    if args.metrics_port is not None:
        os.environ[ENV_PREFIX + "METRICS_PORT"] = str(args.metrics_port)
    if args.namespace:
        os.environ[ENV_PREFIX + "NAMESPACES"] = ",".join(args.namespace)

    import kopf

    from .handlers import state  # registers every handler

    settings = state.SETTINGS
    namespaces = list(settings.namespaces)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    liveness = args.liveness
    if liveness is None and settings.liveness_port:
        host = settings.liveness_address
        host = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL
        liveness = f"http://{host}:{settings.liveness_port}/healthz"
    asyncio.run(
        kopf.operator(
            clusterwide=not namespaces,
            namespaces=namespaces,
            standalone=settings.standalone,
            # A named peering is mandatory for kopf (it waits for the peering CRD): not when alone.
            peering_name=None if settings.standalone else settings.peering_name,
            priority=peering_priority(),
            liveness_endpoint=liveness,
        )
    )
    return 0
