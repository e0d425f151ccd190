"""The work of the saturation benchmark (`saturation.py`) and its clients: the scenarios' sample
lengths (drawn per sample id, so every client sees the same samples), the job each client runs,
and the simulated server each runs on (SGLang's defaults, or the arguments draftgen's operator
renders for the job)."""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass

from common import job_document
from kv_scheduler import KVScheduler


@dataclass(frozen=True)
class Shape:
    """One dataset's lengths: lognormal prompt and completion tokens (means), maxNewTokens."""

    name: str
    prompt: int
    completion: int
    max_new: int = 8192
    sigma: float = 0.7


SCENARIOS: dict[str, list[Shape]] = {
    "short": [Shape("chat", 180, 900)],
    "coding": [Shape("coding", 4000, 3793, 16384, 0.5)],
    # The seed's eight "B" datasets (field-facts: a coding set of 4,000-token prompts and
    # 3,793-token answers, a Glaive function-calling set, ...), run interleaved.
    "mix": [
        Shape("chat", 180, 900),
        Shape("multiturn", 2500, 900),
        Shape("math", 250, 3000),
        Shape("coding", 4000, 3793, 16384, 0.5),
        Shape("glaive", 1200, 250),
        Shape("summarize", 3000, 400),
        Shape("instruct", 400, 1200),
        Shape("writing", 300, 2000),
    ],
}


def _rng(key: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def lognormal(rng: random.Random, mean: float, sigma: float) -> float:
    return rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma)


def draw(shape: Shape, i: int) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of sample `i` of `shape`."""
    rng = _rng(f"{shape.name}:{i}")
    prompt = max(8, int(lognormal(rng, shape.prompt, 0.3)))
    completion = max(1, min(shape.max_new, int(lognormal(rng, shape.completion, shape.sigma))))
    return prompt, completion


def completion_of(body: dict) -> int:
    """The harness hides each sample's completion length in its first input id."""
    return int(body["input_ids"][0])


DEFAULT_CONSERVATIVENESS = 1.0
"""SGLang's own --schedule-conservativeness."""
STORM_PERCENT = 5.0
"""More retracted requests than this share is a retraction storm: each recomputes its prompt."""


@dataclass(frozen=True)
class Client:
    """One client and the server it runs on: `sglang` is SGLang's default server (the seed's
    set-up), `draftgen` the server as draftgen's operator renders it from the job's spec."""

    mode: str
    """"auto" (draftgen's admission) or the fixed number of requests in flight."""
    server: str = "sglang"

    @property
    def label(self) -> str:
        name = "draftgen auto" if self.mode == "auto" else f"fixed {self.mode}"
        return (
            name
            if self.server == "sglang" or self.mode == "auto"
            else f"{name} (draftgen's server)"
        )


def parse_clients(text: str) -> list[Client]:
    """`auto,16,150,150@draftgen`: auto runs on draftgen's server, a number on SGLang's default
    one unless `@draftgen` follows it."""
    out = []
    for item in text.split(","):
        mode, _, server = item.partition("@")
        out.append(Client(mode, "draftgen" if mode == "auto" else (server or "sglang")))
    return out


def job_for(shapes: list[Shape], client: Client, budget: int, conservativeness: float | None):
    from draftgen.spec import parse_job

    conc = (
        {"mode": "auto"}
        if client.mode == "auto"
        else {"mode": "fixed", "maxRequests": int(client.mode)}
    )
    server: dict = {"tensorParallelSize": 1}
    if conservativeness is not None:
        server["scheduleConservativeness"] = conservativeness
    return parse_job(
        job_document(
            "saturation",
            model={"weights": "unused"},
            server=server,
            sampling={"maxNewTokens": max(s.max_new for s in shapes)},
            generator={"concurrency": conc, "onBudgetMet": "finish"},
            datasets=[
                {
                    "name": s.name,
                    "source": "unused",
                    "format": "prompt",
                    "budget": {"completionTokens": budget},
                    "sampling": {"maxNewTokens": s.max_new},
                }
                for s in shapes
            ],
        )
    )


def scheduler_for(job, client: Client, pool: int) -> KVScheduler:
    """SGLang's defaults, or what the operator would pass SGLang for this job: its rendered
    arguments (operator/render/server.py), read back flag by flag."""
    if client.server == "sglang":
        return KVScheduler(pool)
    from draftgen.contract.sglang_flags import SGLangFlag as F
    from draftgen.contract.sglang_flags import value_in
    from draftgen.launch.server_argv import server_args

    args = server_args(job.spec)
    kwargs: dict = {}
    c = value_in(args, F.SCHEDULE_CONSERVATIVENESS)
    if c is not None:
        kwargs["schedule_conservativeness"] = float(c)
    chunk = value_in(args, F.CHUNKED_PREFILL_SIZE)
    if chunk is not None:
        kwargs["chunk"] = int(chunk)
    running = value_in(args, F.MAX_RUNNING_REQUESTS)
    if running is not None:
        kwargs["max_running"] = int(running)
    return KVScheduler(pool, **kwargs)
