"""A gate in front of the real SGLang server: every request goes through to it, except that after
the first `let_through` `/generate` requests the rest are held until the test opens the gate.
While the server is down, a request gets no answer (the connection closes), as from a crash.
`allow(n)` starts a new run of the test's: requests still held (a killed run's) get no answer,
the next `n` go through and the rest are held again — a run can get no further than the test lets.

A test that needs a run to be busy at a given moment (a second writer arriving while the first is
mid-run, a server killed with requests in flight) holds it here instead of counting on a head
start, which a busy machine can lose."""

from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


class Gate:
    """`url` to point a run at; `wait_held()` until a request waits; `open()` lets all through."""

    def __init__(self, upstream: str, let_through: int) -> None:
        parts = urlsplit(upstream)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        self._cond = threading.Condition()
        self._opened = False
        self._epoch = 0
        self.held = 0  # requests held since the last allow()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _forward(self, method: str) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                if method == "POST" and self.path == "/generate" and not outer._admit():
                    self.close_connection = True  # held for a run that is gone: no answer
                    return
                upstream_conn = http.client.HTTPConnection(host, port, timeout=3600)
                try:
                    headers = {"Content-Type": self.headers.get("Content-Type", "")} if body else {}
                    upstream_conn.request(method, self.path, body=body, headers=headers)
                    answer = upstream_conn.getresponse()
                    data = answer.read()
                except (OSError, http.client.HTTPException):
                    # The server is gone: no answer at all, as a client sees a crashed server.
                    self.close_connection = True
                    return
                finally:
                    upstream_conn.close()
                try:
                    self.send_response(answer.status)
                    self.send_header(
                        "Content-Type", answer.getheader("Content-Type") or "text/plain"
                    )
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client went (a killed run): nobody to answer
                    self.close_connection = True

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._let_through = let_through  # /generate requests still let through before holding
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _admit(self) -> bool:
        """Whether the request goes through (after waiting its turn); False drops it."""
        with self._cond:
            if self._opened:
                return True
            if self._let_through > 0:
                self._let_through -= 1
                return True
            epoch = self._epoch
            self.held += 1
            while not self._opened and self._epoch == epoch:
                self._cond.wait()
            return self._opened and self._epoch == epoch

    def allow(self, n: int) -> None:
        """A new run: drop what is held, let `n` more `/generate` requests through, hold the rest."""
        with self._cond:
            self._epoch += 1
            self._let_through, self.held = n, 0
            self._cond.notify_all()

    def wait_held(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not self.held:
            assert time.monotonic() < deadline, "no request reached the gate"
            time.sleep(0.05)

    def open(self) -> None:
        with self._cond:
            self._opened = True
            self._cond.notify_all()

    def __enter__(self) -> Gate:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.open()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
