"""Previews: a program served in the sandbox, reached through its preview URL on *.localhost."""

import asyncio
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator, Union
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import live, ok
from paddock import AsyncPreview, AsyncSandbox, PaddockApiError, PaddockConnectionError, PaddockError, Preview, Sandbox

SERVE = ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/tmp/site"]


def created(url: str) -> dict:
    return {"port": 8000, "url": url, "token": "pvt_x", "signedUrl": f"{url}?paddock_preview_token=pvt_x", "public": False, "expiresAt": "2030-01-01T00:00:00.000Z"}


def test_a_localhost_preview_is_dialled_on_loopback_with_its_host_and_token(fake_api):
    api = fake_api(lambda req, n: ok({"n": n}))
    port = urlsplit(api.url).port
    preview = Preview(created(f"http://8000-abc.localhost:{port}/"))
    res = preview.fetch("/echo?q=1", "POST", {"x-custom": "kept", "Host": "elsewhere.example"}, b"body")
    assert (res.status_code, res.json()) == (200, {"n": 0})
    seen = api.seen[0]
    headers = {k.lower(): v for k, v in seen["headers"].items()}
    assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/echo?q=1", b"body")
    assert headers["host"] == f"8000-abc.localhost:{port}"
    assert headers["x-paddock-preview-token"] == "pvt_x"
    assert headers["x-custom"] == "kept"
    assert "authorization" not in headers
    # A path never names another host: the token would go there.
    with pytest.raises(PaddockError):
        preview.fetch("http://elsewhere.example/")
    with pytest.raises(PaddockError):
        preview.fetch("relative")
    assert asyncio.run(AsyncPreview(created(f"http://8000-abc.localhost:{port}/")).fetch("/async")).status_code == 200
    assert api.seen[1]["path"] == "/async"


@pytest.fixture
def ipv6_only() -> Iterator[int]:
    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"v6")

        def log_message(self, *args: object) -> None:
            pass

    server = Server(("::1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_localhost_preview_is_reached_on_ipv6_loopback_when_ipv4_refuses(ipv6_only: int):
    assert Preview(created(f"http://8000-abc.localhost:{ipv6_only}/")).fetch("/").text == "v6"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(PaddockConnectionError):
        Preview(created(f"http://8000-abc.localhost:{closed}/")).fetch("/")


def status_without_token(url: str) -> int:
    """A request to the preview's host with no token, on loopback, as a stranger sends it."""
    parts = urlsplit(url)
    with httpx.Client(trust_env=False) as http:
        return http.get(f"http://127.0.0.1:{parts.port}/", headers={"Host": parts.netloc}).status_code


def first_answer(preview: Preview) -> httpx.Response:
    """The program's first 200 (the proxy answers 502 while nothing listens on the port)."""
    deadline = time.monotonic() + 20
    while True:
        res = preview.fetch("/")
        if res.status_code == 200 or time.monotonic() > deadline:
            return res
        time.sleep(0.1)


async def first_async_answer(preview: AsyncPreview) -> httpx.Response:
    deadline = time.monotonic() + 20
    while True:
        res = await preview.fetch("/")
        if res.status_code == 200 or time.monotonic() > deadline:
            return res
        await asyncio.sleep(0.1)


def expected_url(sandbox_id: str) -> str:
    return f"http://8000-{sandbox_id[4:]}.localhost:{urlsplit(os.environ['PADDOCK_BASE_URL']).port}/"


def assert_listed(listed: list, preview: Union[Preview, AsyncPreview]) -> None:
    assert [(p["port"], p["url"], p["public"]) for p in listed] == [(8000, preview.url, False)]
    assert preview.token not in repr(listed), "a list never shows a token"


@live
def test_a_served_program_answers_its_preview_with_the_token_and_no_one_without(sbx: Sandbox):
    made = sbx.commands.run("mkdir -p /tmp/site && echo served > /tmp/site/index.html")
    assert made.exit_code == 0, made.stderr
    sbx.commands.run(SERVE, background=True)
    preview = sbx.previews.create(8000)
    assert isinstance(preview, Preview)
    assert (preview.url, preview.public) == (expected_url(sbx.id), False)
    assert preview.signed_url == f"{preview.url}?paddock_preview_token={preview.token}"
    # Python's resolver knows no *.localhost here: only the SDK's loopback dialling reaches it.
    res = first_answer(preview)
    assert (res.status_code, res.text) == (200, "served\n")
    assert preview.fetch("/missing").status_code == 404
    with preview.stream("/") as streamed:
        assert b"".join(streamed.iter_bytes()) == b"served\n"
    assert status_without_token(preview.url) == 401
    assert_listed(sbx.previews.list(), preview)

    opened = sbx.previews.create(8000, public=True, expires_in_seconds=600)
    assert opened.public and opened.token != preview.token
    assert status_without_token(opened.url) == 200

    sbx.previews.remove(8000)
    assert preview.fetch("/").status_code == 401
    assert status_without_token(opened.url) == 401
    assert sbx.previews.list() == []
    with pytest.raises(PaddockApiError) as gone:
        sbx.previews.remove(8000)
    assert (gone.value.status, gone.value.code) == (404, "preview_not_found")


@live
def test_the_async_handle_previews_a_served_program_too():
    async def main() -> None:
        async with await AsyncSandbox.create() as sbx:
            made = await sbx.commands.run("mkdir -p /tmp/site && echo async > /tmp/site/index.html")
            assert made.exit_code == 0, made.stderr
            await sbx.commands.run(SERVE, background=True)
            preview = await sbx.previews.create(8000)
            assert isinstance(preview, AsyncPreview) and preview.url == expected_url(sbx.id)
            res = await first_async_answer(preview)
            assert (res.status_code, res.text) == (200, "async\n")
            async with preview.stream("/") as streamed:
                assert b"".join([c async for c in streamed.aiter_bytes()]) == b"async\n"
            assert status_without_token(preview.url) == 401
            assert_listed(await sbx.previews.list(), preview)
            opened = await sbx.previews.create(8000, public=True)
            assert opened.public and status_without_token(opened.url) == 200
            await sbx.previews.remove(8000)
            assert (await preview.fetch("/")).status_code == 401
            assert status_without_token(opened.url) == 401
            assert await sbx.previews.list() == []

    asyncio.run(main())
