"""A small HTTP server that misbehaves the ways a real SGLang server cannot be made to: it
accepts `/generate` and never answers, answers 5xx, or answers garbage. Health, server info and
`/abort_request` answer like SGLang's, so the generator starts and reaches `/generate`.

Only for faults the real server cannot produce; everything else runs against the real one."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVER_INFO = {
    "max_total_num_tokens": 4096,
    "max_running_requests": 8,
    "max_req_input_len": 4000,
    "skip_tokenizer_init": True,
    "version": "misbehaving",
}

GARBAGE = {
    "html": (200, "text/html", b"<html><body>502 Bad Gateway (from a proxy)</body></html>"),
    "no_meta": (200, "application/json", b'{"text": "hello", "output_ids": [1, 2, 3]}'),
    "bad_ids": (
        200,
        "application/json",
        b'{"output_ids": ["a", 2.5], "meta_info": {"finish_reason": {"type": "stop"}}}',
    ),
    "odd_finish": (
        200,
        "application/json",
        b'{"output_ids": [1], "meta_info": {"finish_reason": {"type": "melted"}}}',
    ),
    "truncated": (200, "application/json", b'{"output_ids": [1, 2, 3], "meta_in'),
    # SGLang's answer when it aborts a request itself (out of memory, a restart): partial ids.
    "abort": (
        200,
        "application/json",
        b'{"output_ids": [1, 2], "meta_info": {"finish_reason": '
        b'{"type": "abort", "message": "out of memory"}}}',
    ),
}


class Misbehaving:
    """`mode`: `stall`, `5xx`, `reset`, or a key of GARBAGE (a list cycles per request)."""

    def __init__(self, mode: str | list[str], abort_stalls: bool = False) -> None:
        """`abort_stalls`: `/abort_request` too is accepted and not answered (until the end)."""
        self.modes = [mode] if isinstance(mode, str) else list(mode)
        self.generate_calls: list[dict] = []
        self.aborts: list[str] = []
        self.paths: list[str] = []
        self._release = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, ctype: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self) -> dict:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw or b"{}")
                except ValueError:
                    return {}

            def do_GET(self) -> None:
                outer.paths.append(self.path)
                if self.path in ("/health", "/health_generate"):
                    self._send(200, "text/plain", b"")
                elif self.path in ("/get_server_info", "/server_info"):
                    self._send(200, "application/json", json.dumps(SERVER_INFO).encode())
                else:
                    self._send(404, "application/json", b'{"detail": "Not Found"}')

            def do_POST(self) -> None:
                outer.paths.append(self.path)
                body = self._body()
                if self.path == "/abort_request":
                    outer.aborts.append(str(body.get("rid")))
                    if abort_stalls:
                        outer._release.wait()
                        self.close_connection = True
                        return
                    self._send(200, "application/json", b"{}")
                    return
                if self.path != "/generate":
                    self._send(404, "application/json", b'{"detail": "Not Found"}')
                    return
                with outer._lock:
                    mode = outer.modes[len(outer.generate_calls) % len(outer.modes)]
                    outer.generate_calls.append(body)
                if mode == "stall":
                    outer._release.wait()  # accepted, never answered (until the test ends)
                    self.close_connection = True
                elif mode == "5xx":
                    self._send(
                        503, "application/json", b'{"error": "the scheduler is not responding"}'
                    )
                elif mode == "reset":
                    self.close_connection = True
                    self.connection.shutdown(2)
                else:
                    self._send(*GARBAGE[mode])

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> Misbehaving:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
