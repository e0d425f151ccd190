"""`draftgen operator`: run the kopf operator with draftgen's handlers.

    draftgen operator --all-namespaces --liveness http://0.0.0.0:8081/healthz
    draftgen operator --namespace drafters --standalone
    draftgen operator --render examples/kimi-k2.5.yaml     # what it would create, then exit
    helm template ... | draftgen operator --render -f -    # every GenerationJob of a chart

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

from draftgen.contract.job_argument import add_job_argument, job_files

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
        action="store_true",
        help="print the objects the operator would create for the GenerationJob(s) of FILE "
        "(with the operator's settings) and exit",
    )
    add_job_argument(parser, many=True)


def render(paths: list[str]) -> int:
    """Print every object the operator would create for the jobs of these files (each
    GenerationJob document; other kinds are skipped), or why it would refuse one."""
    import sys

    import yaml

    from draftgen.contract.generator_cli import ExitCode
    from draftgen.spec import SpecError, job_documents, parse_job

    from .render import render_all
    from .settings import OperatorSettings
    from .validate import check

    settings = OperatorSettings.from_env()
    objs: list = []
    for path in paths:
        docs = job_documents(path)  # a SpecError is reported and mapped by draftgen.cli
        if not docs:
            raise SpecError(["no document of kind GenerationJob"], path)
        jobs = [(parse_job(doc.data, doc.source), doc) for doc in docs]
        for job, doc in jobs:
            spec = doc.data["spec"]  # the spec exactly as written: unset stays unset
            _, problems = check(job.metadata.name, spec, settings)
            if problems:
                print(
                    f"{doc.source}: the operator would reject this job:\n"
                    + "\n".join(f"  - {p}" for p in problems),
                    file=sys.stderr,
                )
                return ExitCode.INVALID
            objs += render_all(
                job.metadata.name, job.metadata.namespace or "default", spec, settings
            )
    print(yaml.safe_dump_all(objs, sort_keys=False, width=100), end="")
    return ExitCode.OK


def peering_priority() -> int:
    """This replica's kopf peering priority: distinct per replica, higher for older ones.

    kopf pauses *every* operator that sees a live peer of the same priority, so kopf's default
    (0 for all) would leave no replica working. Older replicas win, so a new pod (a rollout, a
    rescheduled standby) waits instead of taking over; when the active one stops, the oldest
    standby resumes once its keep-alive expires."""
    return -(time.time_ns() // 1000)


def run(args: argparse.Namespace) -> int:
    named = args.job_files or args.job_flags
    if args.render:
        return render(job_files(args))
    if named:
        import sys

        print(
            "draftgen operator: a job file goes with --render (print what it creates)",
            file=sys.stderr,
        )
        return 2
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
    from draftgen.timefmt import IsoFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(IsoFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[handler])

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
