"""Start and stop a real SGLang server on the CPU, for tests, the demo and benchmarks.

The server runs from the virtual environment that ``scripts/setup_sglang.sh`` creates
(``$DRAFTGEN_CACHE/venv-sglang``, default ``.cache/venv-sglang`` at the repository root), with
the CPU flags from the project's SGLang notes, on a tiny model built by
``scripts/build_test_models.py``::

    with SGLangServer(".cache/models/tiny-kimi", max_total_tokens=4096) as server:
        httpx.post(server.url + "/generate", json={...})

    server.kill()       # SIGKILL the whole process group (fault tests)
    server.restart()    # same port

    # Plain data parallelism: two schedulers, each with its own KV pool of max_total_tokens,
    # `dp_rank`-labelled metrics, and `routed_dp_rank` accepted on /generate (the client-facing
    # structure of data-parallel attention on GPUs).
    SGLangServer(".cache/models/tiny-kimi", max_total_tokens=1024, dp_size=2)

Command line (used by ``make demo``); runs until Ctrl-C::

    python -m draftgen.testing.sglang serve --model .cache/models/tiny-kimi --port 30000 \
        --max-total-tokens 4096

Standard library only (the flag names come from draftgen.contract.sglang_flags, which is too).

Over 400 lines on purpose: most of it is the one `SGLangServer` class (start, health wait, log
tail, kill and restart of one process group), whose parts share the process's state; the
`serve` command line at the end is its only other user.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.sglang_flags import SGLangFlag as F
from draftgen.contract.sglang_port import bind_failed, port_taken
from draftgen.errors import DraftgenError
from draftgen.sglang_cpu import (
    CPU_FLAGS,
    cache_dir,
    cpu_environment,
    repo_root,
    sglang_python,
)

__all__ = [
    "SGLangServer",
    "SGLangServerError",
    "cache_dir",
    "cpu_environment",
    "free_port",
    "repo_root",
    "sglang_python",
]

DEFAULT_MAX_TOTAL_TOKENS = 4096
DEFAULT_STARTUP_TIMEOUT = 300.0
DEFAULT_STOP_GRACE = 20.0


class SGLangServerError(DraftgenError, RuntimeError):
    """The server could not be started (the message includes the tail of its log)."""

    exit_code = ExitCode.UNEXPECTED
    fix = "read the tail of the server's log in the message"


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now, for a process that binds it later. Picked below the kernel's ephemeral
    range where there is room: a port from that range (what binding port 0 gives) can be taken
    meanwhile by any outgoing connection on a busy machine, the test's own among them."""
    low = _ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(50):
        port = rng.randrange(max(1024, low - 12_000), low)
        if not port_taken(host, port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _tail(path: Path | None, lines: int = 40) -> str:
    if path is None or not path.exists():
        return "(no log)"
    with open(path, "rb") as f:
        try:
            f.seek(-256 * 1024, os.SEEK_END)
        except OSError:
            f.seek(0)
        data = f.read().decode("utf-8", "replace")
    return "\n".join(deque(data.splitlines(), maxlen=lines))


class SGLangServer:
    """A ``python -m sglang.launch_server`` process group on the CPU.

    ``port=None`` picks a free port at the first start and keeps it for restarts. The log
    (stdout and stderr of every start, appended) goes to ``log_path`` (default
    ``<cache>/logs/sglang-<port>.log``).
    """

    def __init__(
        self,
        model_path: str | os.PathLike,
        port: int | None = None,
        max_total_tokens: int | None = DEFAULT_MAX_TOTAL_TOKENS,
        extra_args: Sequence[str] = (),
        log_path: str | os.PathLike | None = None,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        stop_grace: float = DEFAULT_STOP_GRACE,
        env: Mapping[str, str] | None = None,
        python: str | os.PathLike | None = None,
        dp_size: int = 1,
    ) -> None:
        if dp_size < 1:
            raise ValueError(f"dp_size {dp_size}: must be at least 1")
        self.dp_size = dp_size
        self._dispatcher_yielded = False
        self.model_path = Path(model_path).resolve()
        self.host = host
        self.port = port
        self.max_total_tokens = max_total_tokens
        self.extra_args = tuple(extra_args)
        self.log_path = Path(log_path).resolve() if log_path else None
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.env = dict(env or {})
        self.python = Path(python) if python else sglang_python()
        self.proc: subprocess.Popen | None = None
        self._own_port = False  # picked by the first start: another is picked if it is taken
        self._log_start = 0
        self.startup_seconds: float | None = None

    # -- public API ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port is None:
            raise SGLangServerError("server has no port yet: call start()")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        cmd = [
            str(self.python),
            "-m",
            "sglang.launch_server",
            F.MODEL_PATH.value,
            str(self.model_path),
            F.HOST.value,
            self.host,
            F.PORT.value,
            str(self.port),
            *CPU_FLAGS,
        ]
        if self.max_total_tokens is not None:
            cmd += [F.MAX_TOTAL_TOKENS.value, str(int(self.max_total_tokens))]
        if self.dp_size > 1:
            cmd += [F.DP_SIZE.value, str(self.dp_size)]
        return cmd + list(self.extra_args)

    def environment(self) -> dict[str, str]:
        env = cpu_environment(dict(os.environ))
        if self.dp_size > 1:
            # SGLang's CPU engine refuses more data-parallel ranks than NUMA nodes unless each
            # rank's scheduler is given its cores: one each, round the machine's.
            cores = os.cpu_count() or 1
            env["SGLANG_CPU_OMP_THREADS_BIND"] = "|".join(
                str(i % cores) for i in range(self.dp_size)
            )
        env.update(self.env)
        return env

    def start(self, wait: bool = True) -> SGLangServer:
        """Launch the server (on the same port as before, if it ran before) and, with
        ``wait``, block until ``/health_generate`` answers 200."""
        if self.is_running():
            raise SGLangServerError(f"server already running (pid {self.pid}) at {self.url}")
        if not self.python.exists():
            raise SGLangServerError(
                f"{self.python} is missing: run `make sglang` (scripts/setup_sglang.sh)"
            )
        if not (self.model_path / "config.json").exists():
            raise SGLangServerError(
                f"{self.model_path} has no config.json: run `make models` "
                "(scripts/build_test_models.py)"
            )
        if self.port is None:
            self._own_port = True
            self.port = free_port(self.host)
        if self.log_path is None:
            self.log_path = cache_dir() / "logs" / f"sglang-{self.port}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        workdir = cache_dir()
        workdir.mkdir(parents=True, exist_ok=True)
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"\n==== {stamp} start: {' '.join(self.command())}\n".encode())
            log.flush()
            self._t_start = time.monotonic()
            self._dispatcher_yielded = False
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(workdir),
                env=self.environment(),
                start_new_session=True,  # its own process group: stop() signals all of it
            )
        if wait:
            self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float | None = None) -> None:
        """Poll ``/health_generate`` until it answers 200; on timeout or exit, stop the server
        and raise ``SGLangServerError`` with the tail of its log."""
        timeout = self.startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                self._reap_group()
                raise SGLangServerError(
                    f"SGLang server exited during startup (exit code {code}); "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            self._yield_dispatcher()
            if self._bind_failed():
                # Taken while the model loaded: SGLang stays up serving nothing. A port this
                # launcher picked for a first start is picked again; any other is the caller's.
                self._reap_group()
                if not self._own_port:
                    raise SGLangServerError(
                        f"port {self.port} was taken while the server started; log "
                        f"{self.log_path}:\n{_tail(self.log_path)}"
                    )
                self.port = free_port(self.host)
                self.start(wait=False)
                continue
            if self.healthy(timeout=5.0, generate=True):
                self._own_port = False  # clients know this URL now: a restart keeps it
                self.startup_seconds = time.monotonic() - self._t_start
                return
            if time.monotonic() > deadline:
                self.stop()
                raise SGLangServerError(
                    f"SGLang server not healthy after {timeout:.0f}s at {self.url}; "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            time.sleep(0.5)

    def _bind_failed(self) -> bool:
        return self.log_path is not None and bind_failed(self.log_path, self._log_start)

    def healthy(self, timeout: float = 5.0, generate: bool = True) -> bool:
        path = "/health_generate" if generate else "/health"
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as resp:
                return resp.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM to the process group; SIGKILL what is left after ``grace`` seconds."""
        if self.proc is None:
            return
        grace = self.stop_grace if grace is None else grace
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and not self._group_alive():
                break
            time.sleep(0.1)
        self._reap_group()

    def kill(self) -> None:
        """SIGKILL the whole process group at once (a crash, for fault tests)."""
        if self.proc is None:
            return
        self._reap_group()

    def restart(self, wait: bool = True) -> SGLangServer:
        """Stop (if running) and start again on the same port."""
        self.stop()
        # the old listening socket can linger for a moment after a SIGKILL
        deadline = time.monotonic() + 10
        while (
            time.monotonic() < deadline
            and self.port is not None
            and port_taken(self.host, self.port)
        ):
            time.sleep(0.2)
        return self.start(wait=wait)

    def __enter__(self) -> SGLangServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        port = self.port if self.port is not None else "?"
        return f"<SGLangServer {self.model_path.name} {self.host}:{port} {state}>"

    # -- internals ----------------------------------------------------------------------------

    def _yield_dispatcher(self) -> None:
        """With data-parallel ranks, SGLang 0.5.23's dispatcher process polls its socket without
        ever sleeping (`DataParallelController.event_loop`): a whole core, idle or not. Lowest
        priority for it, so it spins only on time nothing else wants (its schedulers keep
        theirs)."""
        if self.dp_size < 2 or self.proc is None or self._dispatcher_yielded:
            return
        for stat in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if not stat.read_bytes().startswith(b"sglang::data_parallel_controller"):
                    continue
                pid = int(stat.parent.name)
                if os.getpgid(pid) == self.proc.pid:
                    os.setpriority(os.PRIO_PROCESS, pid, 19)
                    self._dispatcher_yielded = True
            except (OSError, ValueError):
                continue

    def _signal_group(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)  # pgid == pid (start_new_session)
        except (ProcessLookupError, PermissionError):
            pass

    def _group_alive(self) -> bool:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True

    def _reap_group(self) -> None:
        """SIGKILL whatever is left of the group and wait for the main process."""
        if self.proc is None:
            return
        self._signal_group(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10
        while self._group_alive() and time.monotonic() < deadline:
            time.sleep(0.05)


# -- command line ------------------------------------------------------------------------------


def _serve(args: argparse.Namespace, extra: Iterable[str]) -> int:
    server = SGLangServer(
        args.model,
        port=args.port,
        max_total_tokens=args.max_total_tokens,
        dp_size=args.dp_size,
        extra_args=tuple(extra),
        log_path=args.log,
        host=args.host,
        startup_timeout=args.startup_timeout,
    )

    def _term(signum, frame):  # turn SIGTERM into the same clean stop as Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    # explicit: a shell without job control starts background jobs with SIGINT ignored
    signal.signal(signal.SIGINT, _term)
    print(
        f"starting SGLang on {args.host}:{server.port or '(free port)'} "
        f"(log: {args.log or 'under ' + str(cache_dir() / 'logs')})",
        flush=True,
    )
    try:
        server.start()
        print(
            f"SGLang ready at {server.url} after {server.startup_seconds:.1f}s "
            f"(model {server.model_path}); Ctrl-C to stop",
            flush=True,
        )
        while server.is_running():
            time.sleep(1.0)
        code = server.proc.returncode if server.proc is not None else None
        print(
            f"SGLang exited with code {code}; log {server.log_path}:\n{_tail(server.log_path, 20)}",
            file=sys.stderr,
        )
        return 1
    except SGLangServerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping SGLang", flush=True)
        return 0
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m draftgen.testing.sglang")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser(
        "serve",
        help="run a CPU SGLang server until Ctrl-C (arguments after -- go to sglang.launch_server)",
    )
    sp.add_argument("--model", required=True, help="model directory")
    sp.add_argument("--port", type=int, default=None, help="default: a free port")
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--max-total-tokens", type=int, default=DEFAULT_MAX_TOTAL_TOKENS)
    sp.add_argument("--dp-size", type=int, default=1, help="data-parallel ranks (one pool each)")
    sp.add_argument("--log", default=None, help="server log file")
    sp.add_argument("--startup-timeout", type=float, default=DEFAULT_STARTUP_TIMEOUT)
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        return _serve(args, extra)
    return 2


if __name__ == "__main__":
    sys.exit(main())
