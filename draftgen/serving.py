"""SGLang on this machine, started the way the operator starts it in a cluster: `draftgen serve
JOB` and `draftgen generate JOB --serve` (no Kubernetes, e.g. one 8-GPU box).

The arguments are the operator's own (`draftgen.controller.render.server.server_args`, the same
code, not a copy), with two local differences shown in the printed command: `--model-path` is
the job's model resolved here (a relative path from the job file's directory; the operator's
models volume does not exist here) and `--port` may be given on the command line. The server
environment carries the operator's SGLang settings (`/health` a plain liveness check).

Local overrides, for a machine that is not the GPU box the spec describes:
- `--server-arg=ARG` (repeatable) appends ARG to the arguments (`--server-arg=--max-total-tokens=8192`);
- `--cpu` appends the CPU flags and environment of `draftgen.testing.sglang` (CPU attention and
  sampling, no CUDA graphs) and runs the CPU SGLang environment `make sglang` builds: tests and
  `make demo` run the operator's arguments this way on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.model_location import is_hub, loader_name
from draftgen.contract.sglang_flags import SGLangFlag as F
from draftgen.contract.sglang_port import bind_failed, port_taken
from draftgen.errors import RunError
from draftgen.spec import GenerationJob

LOCAL_HOST = "127.0.0.1"
"""Where the generator reaches a server draftgen started (it binds as the operator renders)."""


class ServeError(RunError):
    """The server draftgen started could not start, or it exited."""

    exit_code = ExitCode.SERVERS_DOWN
    fix = "read the server's log named in the message (draftgen serve prints its command)"


class PortTaken(ServeError):
    """The server's port is taken before the start (checked first: SGLang would load the model
    for minutes and then stay up without serving)."""

    fix = "stop what listens on the port, or give another with --port N"


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """The options `serve` and `generate --serve` share."""
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="the server's port (default: spec.server.port)",
    )
    parser.add_argument(
        "--server-arg",
        dest="server_args",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for sglang.launch_server, after the job's (a local override; "
        "write --server-arg=--flag=value); repeatable",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="run on the CPU: add draftgen.testing.sglang's CPU flags and environment and use "
        "the CPU SGLang environment `make sglang` builds (tests, `make demo`)",
    )
    parser.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="the Python that has sglang installed (default: $DRAFTGEN_SGLANG_PYTHON, with "
        "--cpu the CPU environment, else this Python)",
    )


def server_command_from(job: GenerationJob, base_dir: Path, args: argparse.Namespace) -> list[str]:
    """`server_command` with the local options `draftgen serve` and `generate --serve` share
    (`--port`, `--server-arg`, `--cpu`, `--python`)."""
    return server_command(
        job,
        base_dir,
        port=args.port,
        extra=args.server_args,
        cpu=args.cpu,
        python=args.python,
    )


def server_command(
    job: GenerationJob,
    base_dir: Path,
    *,
    port: int | None = None,
    extra: Sequence[str] = (),
    cpu: bool = False,
    python: str | None = None,
) -> list[str]:
    """`PYTHON -m sglang.launch_server` and the operator's arguments for the job, made local."""
    from draftgen.launch.server_argv import server_args

    args = server_args(job.spec)
    _set(args, F.MODEL_PATH, local_model(job.spec.model.weights, base_dir))
    if port is not None:
        _set(args, F.PORT, str(port))
    if cpu:
        from draftgen.sglang_cpu import CPU_FLAGS

        args += [a for a in CPU_FLAGS if a not in args]  # --enable-metrics is the job's already
    return [_python(python, cpu), "-m", "sglang.launch_server", *args, *extra]


def _set(args: list[str], flag: F, value: str) -> None:
    args[args.index(flag.value) + 1] = value


def local_model(weights: str, base_dir: Path) -> str:
    """`--model-path` here: a hub id as is (SGLang fetches it), a path from the job's directory."""
    if is_hub(weights):
        return loader_name(weights)
    path = Path(loader_name(weights))
    return str(path if path.is_absolute() else (base_dir / path).resolve())


def _python(python: str | None, cpu: bool) -> str:
    if python:
        return python
    if os.environ.get("DRAFTGEN_SGLANG_PYTHON"):
        return os.environ["DRAFTGEN_SGLANG_PYTHON"]
    if cpu:
        from draftgen.sglang_cpu import sglang_python

        return str(sglang_python())
    return sys.executable


def server_environment(job: GenerationJob, cpu: bool) -> dict[str, str]:
    """This process's environment with the operator's SGLang settings (and the CPU ones)."""
    from draftgen.launch.server_argv import SGLANG_SETTINGS

    env = dict(os.environ)
    env.update(SGLANG_SETTINGS)
    if not is_hub(job.spec.model.weights):
        env.setdefault("HF_HUB_OFFLINE", "1")
    if cpu:
        from draftgen.sglang_cpu import cpu_environment

        env = cpu_environment(env)
    return env


def server_url(command: Sequence[str]) -> str:
    """The URL the generator reaches the started server at."""
    return f"http://{LOCAL_HOST}:{command[command.index(F.PORT.value) + 1]}"


def _address(command: Sequence[str]) -> tuple[str, int | None]:
    """The host and port the command binds (SGLang's default host when none is given)."""

    def value(flag: F) -> str | None:
        return command[command.index(flag.value) + 1] if flag.value in command else None

    port = value(F.PORT)
    return value(F.HOST) or LOCAL_HOST, int(port) if port and port.isdigit() else None


def shown(command: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in command)


class ServerProcess:
    """`sglang.launch_server` in its own process group: `stop()` ends it and every child (the
    scheduler and detokenizer processes SGLang starts)."""

    def __init__(
        self, command: Sequence[str], env: Mapping[str, str], log: Path | None = None
    ) -> None:
        self.command = list(command)
        self.log = log
        self._log_start = log.stat().st_size if log is not None and log.exists() else 0
        host, port = _address(self.command)
        if port is not None and port_taken(host, port):
            raise PortTaken(
                f"port {port} is taken on this machine (another SGLang server, or an earlier "
                "run's?): stop what listens there, or give another with --port N"
            )
        out = open(log, "ab") if log is not None else None  # noqa: SIM115 (the child keeps it)
        try:
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT if out is not None else None,
                env=dict(env),
                start_new_session=True,
            )
        except OSError as err:
            raise ServeError(f"cannot start {self.command[0]}: {err}") from err
        finally:
            if out is not None:
                out.close()

    def exited(self) -> int | None:
        return self.proc.poll()

    def bind_failed(self) -> bool:
        """Whether the log says the HTTP port could not be bound (taken during the model load):
        SGLang then stays up serving nothing, so this counts as an exit."""
        return self.log is not None and bind_failed(self.log, self._log_start)

    def kill(self) -> None:
        """SIGKILL the whole group at once (a second Ctrl-C)."""
        self._signal(signal.SIGKILL)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM to the group; SIGKILL what is left after `grace` seconds."""
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self._group_alive():
            self.proc.poll()
            time.sleep(0.1)
        self.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
