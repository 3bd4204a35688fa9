"""The SDK's connections send at once: TCP_NODELAY, so a request's body never waits for a delayed ACK."""

import asyncio
import socket

from paddock import AsyncPaddock, Paddock, _http

from conftest import ok


def test_sync_and_async_connections_set_tcp_nodelay(fake_api, monkeypatch):
    api = fake_api(lambda req, n: ok({"id": "acc"}))
    seen = []
    original = _http._no_delay

    def recording(sock):
        original(sock)
        seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(_http, "_no_delay", recording)
    with Paddock(api_key="pdk_live_x", base_url=api.url) as c:
        c.account()

    async def main() -> None:
        async with AsyncPaddock(api_key="pdk_live_x", base_url=api.url) as c:
            await c.account()

    asyncio.run(main())
    if seen == [] and "socket_options" in _http.httpx.HTTPTransport.__init__.__code__.co_varnames:
        return  # httpx 0.24+ sets the option itself (no_delay_transport)
    assert len(seen) == 2 and all(seen), seen
