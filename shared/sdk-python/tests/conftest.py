"""Shared fixtures: the live tests run against the Paddock named by PADDOCK_BASE_URL / PADDOCK_API_KEY.

test/sdk-python/python-sdk.test.ts starts a real stack and runs this suite against it; without
those variables the live tests are skipped and only the offline ones run.
"""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, List, Optional, Tuple

import pytest

from paddock import Paddock, Sandbox

LIVE = bool(os.environ.get("PADDOCK_BASE_URL") and os.environ.get("PADDOCK_API_KEY"))
live = pytest.mark.skipif(not LIVE, reason="needs PADDOCK_BASE_URL and PADDOCK_API_KEY of a running Paddock")


@pytest.fixture(scope="session")
def client() -> Iterator[Paddock]:
    with Paddock() as c:
        yield c


@pytest.fixture(scope="module")
def sbx(client: Paddock) -> Iterator[Sandbox]:
    """One sandbox for a whole test module (creating one per test would be slow)."""
    with Sandbox.create(client=client, metadata={"suite": "python-sdk"}) as s:
        yield s


Answer = Callable[[BaseHTTPRequestHandler, int], Optional[Tuple[int, dict, bytes]]]


class FakeApi:
    """A loopback HTTP server answering as told, recording what it was sent (method, path, headers, time)."""

    def __init__(self, answer: Answer) -> None:
        self.seen: List[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                import time

                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                fake.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body, "at": time.monotonic()})
                answered = answer(self, len(fake.seen) - 1)
                if answered is None:  # the connection closed with no answer, as a server closing an idle one does
                    self.close_connection = True
                    return
                status, headers, out = answered
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def problem(status: int, code: str, retry_after: str = "", request_id: str = "req_1") -> Tuple[int, dict, bytes]:
    headers = {"content-type": "application/problem+json", "x-request-id": request_id}
    if retry_after:
        headers["retry-after"] = retry_after
    body = {"type": f"urn:paddock:error:{code}", "title": code, "status": status, "detail": f"{code} detail", "code": code, "requestId": request_id}
    return status, headers, json.dumps(body).encode()


def ok(body: object, status: int = 200) -> Tuple[int, dict, bytes]:
    return status, {"content-type": "application/json"}, json.dumps(body).encode()


@pytest.fixture
def fake_api() -> Iterator[Callable[[Answer], FakeApi]]:
    made: List[FakeApi] = []

    def start(answer: Answer) -> FakeApi:
        api = FakeApi(answer)
        made.append(api)
        return api

    yield start
    for api in made:
        api.close()
