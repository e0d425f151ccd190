"""What every benchmark shares: machine facts, the result file each one writes, the table it
prints, a real SGLang server on the CPU, and a sampler of the server's `/metrics`.

Each benchmark writes `.cache/bench/results/<name>.json` ({title, command, columns, rows, goals,
notes, machine}); `bench/report.py` turns those files into `docs/benchmarks.md`. Figures from a
shared, noisy 2-core machine are only comparable within one run, so every comparison is a ratio
measured side by side.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache"
# Work directories and result files; the smoke test points both elsewhere.
BENCH_DIR = Path(os.environ.get("DRAFTGEN_BENCH_DIR", CACHE / "bench"))
RESULTS = Path(os.environ.get("DRAFTGEN_BENCH_RESULTS", BENCH_DIR / "results"))
MODELS = CACHE / "models"
TINY_KIMI = MODELS / "tiny-kimi"
SGLANG_PY = CACHE / "venv-sglang" / "bin" / "python"
PY = CACHE / "venv" / "bin" / "python"
# tiny-kimi as a job's `model`: Kimi-K2's template with its thinking prefix.
TINY_KIMI_MODEL = {
    "weights": str(TINY_KIMI),
    "chatTemplateKwargs": {"thinking": True},
    "generationPrefix": "<think>",
}


# Words that random prompt text is drawn from.
PLAIN_WORDS = [
    "the",
    "a",
    "data",
    "model",
    "token",
    "budget",
    "server",
    "queue",
    "cache",
    "prompt",
    "answer",
    "reason",
    "step",
    "tool",
    "call",
    "python",
    "kernel",
    "graph",
    "batch",
    "decode",
    "prefill",
    "memory",
    "layer",
    "vector",
    "learning",
    "training",
]


def job_document(name: str, **spec) -> dict:
    """A GenerationJob document named `name` with `spec` (one server of TP 1 unless given)."""
    return {
        "apiVersion": "draftgen.io/v1alpha1",
        "kind": "GenerationJob",
        "metadata": {"name": name},
        "spec": {"server": {"tensorParallelSize": 1}, **spec},
    }


def machine() -> dict[str, Any]:
    """Facts a reader needs to judge the figures: cores, load, CPU, versions, commit."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            text=True,
            capture_output=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "nproc": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu,
        "python": platform.python_version(),
        "commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }


def command_line() -> str:
    """The command that reproduces this run, relative to the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script_s = str(script.relative_to(REPO))
    except ValueError:
        script_s = str(script)
    return " ".join([".cache/venv/bin/python", script_s, *map(shlex.quote, sys.argv[1:])])


@dataclass
class Goal:
    """One goal of the issue: what it asks, the measured figure, whether it was met, and why not."""

    goal: str
    measured: str
    met: bool | None
    """None: not measured in this run (say why in `why`)."""
    why: str = ""


@dataclass
class Result:
    """What one benchmark run produced."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra_tables: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    machine_start: dict[str, Any] = field(default_factory=machine)

    def add_table(self, title: str, columns: list[str], rows: list[list[Any]]) -> None:
        self.extra_tables.append({"title": title, "columns": columns, "rows": rows})
        print(f"\n{title}")
        print_table(columns, rows)

    def save(self) -> Path:
        """Print the table and goals, write `.cache/bench/results/<name>.json`."""
        print(f"\n== {self.title}")
        print_table(self.columns, self.rows)
        for g in self.goals:
            verdict = {True: "MET", False: "NOT MET", None: "not measured"}[g.met]
            print(f"goal: {g.goal} -> {g.measured}: {verdict}" + (f" ({g.why})" if g.why else ""))
        for note in self.notes:
            print(f"note: {note}")
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{self.name}.json"
        data = {
            "name": self.name,
            "title": self.title,
            "command": command_line(),
            "columns": self.columns,
            "rows": self.rows,
            "extra_tables": self.extra_tables,
            "goals": [g.__dict__ for g in self.goals],
            "notes": self.notes,
            "seconds": round(time.monotonic() - self.started, 1),
            "machine": {**self.machine_start, "loadavg_end": machine()["loadavg"]},
        }
        path.write_text(json.dumps(data, indent=2, default=str) + "\n")
        print(f"(results in {path}, {data['seconds']} s)")
        return path


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "–"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) < 0.01 and value else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "–" if value is None else str(value)


def print_table(columns: list[str], rows: list[list[Any]]) -> None:
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for r in cells:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)))


def markdown_table(columns: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        out.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(out)


# ---- a real SGLang server and what it reports -------------------------------------------------


def sglang_available() -> str | None:
    """None when a real server can be started here, else what is missing (and the fix)."""
    if not SGLANG_PY.exists():
        return f"{SGLANG_PY} is missing: run `make sglang`"
    if not (TINY_KIMI / "tokenizer.json").exists():
        return f"{TINY_KIMI} is missing: run `make models`"
    try:
        import draftgen.testing.sglang  # noqa: F401
    except ImportError as err:
        return f"draftgen.testing.sglang is not importable ({err})"
    return None


@contextmanager
def sglang_server(
    model: Path = TINY_KIMI, *, max_total_tokens: int, **kwargs: Any
) -> Iterator[Any]:
    """A real SGLang CPU server (`draftgen.testing.sglang.SGLangServer`), stopped on exit."""
    from draftgen.testing.sglang import SGLangServer

    with SGLangServer(model, max_total_tokens=max_total_tokens, **kwargs) as server:
        yield server


def read_sglang_metrics(url: str, timeout: float = 5.0) -> dict[str, float]:
    """`sglang:` values of the server's `/metrics` (largest over label sets), as the generator
    reads them."""
    import httpx

    from draftgen.generator.sglang.client import parse_metrics

    return parse_metrics(httpx.get(f"{url}/metrics", timeout=timeout).text)


class MetricsSampler:
    """Reads a server's `/metrics` every `interval` seconds in a thread while a run goes on."""

    def __init__(self, url: str, interval: float = 0.5) -> None:
        self.url = url
        self.interval = interval
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.time(), read_sglang_metrics(self.url)))
            except Exception:
                pass
            self._stop.wait(self.interval)

    def __enter__(self) -> MetricsSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)

    def window(self, start: float, end: float) -> list[dict[str, float]]:
        return [v for t, v in self.samples if start <= t <= end]

    def saturated_share(self, start: float, end: float, usage: float = 0.9) -> float:
        """Share of samples in [start, end] in which the server had a queue or its KV usage
        was above `usage`: the server had more work than it could run at once."""
        w = self.window(start, end)
        if not w:
            return float("nan")
        hits = sum(
            1 for v in w if v.get("num_queue_reqs", 0) > 0 or v.get("token_usage", 0) > usage
        )
        return hits / len(w)

    def mean(self, name: str, start: float, end: float) -> float:
        w = self.window(start, end)
        return sum(v.get(name, 0.0) for v in w) / len(w) if w else float("nan")


def env_int(name: str, default: int) -> int:
    """A size knob from the environment (`BENCH_...`), so `make bench` and the smoke test can
    share the scripts."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def draftgen_generate(url: str, job: Path, out: Path, exe: str | None = None) -> str:
    """Run `draftgen generate --job JOB --server URL --output OUT --progress log` (`exe`: the
    draftgen executable, default the project's venv) and return its command line with paths
    relative to the repository; a failed run ends the benchmark with its stderr."""
    cmd = [
        exe or str(REPO / ".cache/venv/bin/draftgen"),
        "generate",
        "--job",
        str(job),
        "--server",
        url,
        "--output",
        str(out),
        "--progress",
        "log",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"draftgen generate failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return " ".join(cmd[1:]).replace(str(REPO) + "/", "")
