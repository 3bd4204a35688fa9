"""Previews: a sandbox's ports reached from outside at URLs of their own (``sbx.previews``).

A preview's ``fetch`` requests the program through it with the token. On a host under
``.localhost`` (a stack on this machine, such as ``npm start``'s) it dials the loopback address with
the preview's host in ``Host``, as browsers and curl do: Python's resolver on a glibc host without
nss-myhostname does not map ``*.localhost``.
"""

import contextlib
from dataclasses import dataclass
from typing import Any, AsyncIterable, AsyncIterator, Dict, Iterable, Iterator, List, Mapping, Optional, Union, cast
from urllib.parse import urlsplit

import httpx

from . import _routes as r
from . import _types as t
from ._errors import PaddockConnectionError, PaddockError
from ._http import AsyncTransport, SyncTransport, describe

#: The header a program sends a preview's token in.
PREVIEW_TOKEN_HEADER = "X-Paddock-Preview-Token"

Content = Union[str, bytes, Iterable[bytes]]
AsyncContent = Union[str, bytes, Iterable[bytes], AsyncIterable[bytes]]


@dataclass
class _Plan:
    """Where one request goes: the URLs to try in turn, its headers, and the transport's settings."""

    urls: List[str]
    headers: Dict[str, str]
    extensions: Dict[str, Any]
    #: Proxies and .netrc from the environment: never for a connection made on loopback.
    trust_env: bool
    origin: str


def _is_localhost(hostname: str) -> bool:
    name = hostname.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def _plan(preview_url: str, path: str, token: str, headers: Optional[Mapping[str, str]]) -> _Plan:
    if not isinstance(path, str) or not path.startswith("/"):
        raise PaddockError(f'A preview path starts with "/" (given {path!r}).')
    parts = urlsplit(preview_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    sent = {k: v for k, v in (headers or {}).items() if k.lower() not in ("host", PREVIEW_TOKEN_HEADER.lower())}
    sent[PREVIEW_TOKEN_HEADER] = token
    hostname = parts.hostname or ""
    if not _is_localhost(hostname):
        # The path is appended to the origin, never resolved against it: no path names another host.
        return _Plan([origin + path], sent, {}, True, origin)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    sent["Host"] = parts.netloc
    # TLS still names the preview's host (httpx 0.24 and newer take it; older ones verify the address).
    extensions: Dict[str, Any] = {"sni_hostname": hostname} if parts.scheme == "https" else {}
    urls = [f"{parts.scheme}://{address}:{port}{path}" for address in ("127.0.0.1", "[::1]")]
    return _Plan(urls, sent, extensions, False, origin)


class _PreviewFields:
    """A previewed port with one of its tokens, as ``previews.create`` answers it."""

    def __init__(self, created: t.CreatePreviewResponse, timeout: Optional[httpx.Timeout] = None) -> None:
        """Made by ``previews.create``; ``timeout`` bounds each request of ``fetch`` (default 60 s)."""
        #: The sandbox's port.
        self.port: int = created["port"]
        #: The preview's URL (its root): ``<scheme>://<port>-<sandbox id without sbx_>.<preview domain>/``.
        self.url: str = created["url"]
        #: Sent as X-Paddock-Preview-Token; opens this port of this sandbox only.
        self.token: str = created["token"]
        #: The URL with the token, for a browser: traded for a cookie of that host.
        self.signed_url: str = created["signedUrl"]
        #: Whether everyone may reach it, without a token.
        self.public: bool = created["public"]
        #: When this token expires (RFC 3339); the preview stays until removed or the sandbox ends.
        self.expires_at: str = created["expiresAt"]
        self._timeout = timeout or httpx.Timeout(60.0, connect=10.0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(port={self.port!r}, url={self.url!r}, public={self.public!r})"


class Preview(_PreviewFields):
    """A previewed port with one of its tokens; ``fetch`` reaches the program through it."""

    @contextlib.contextmanager
    def stream(
        self, path: str = "/", method: str = "GET", headers: Optional[Mapping[str, str]] = None, content: Optional[Content] = None
    ) -> Iterator[httpx.Response]:
        """Like :meth:`fetch`, with the body unread: iterate ``iter_bytes()`` in the block; leaving it closes the connection."""
        plan = _plan(self.url, path, self.token, headers)
        with httpx.Client(timeout=self._timeout, follow_redirects=False, trust_env=plan.trust_env) as http:
            res: Optional[httpx.Response] = None
            for i, url in enumerate(plan.urls):
                request = http.build_request(method, url, headers=plan.headers, content=content, extensions=plan.extensions)
                try:
                    res = http.send(request, stream=True)
                    break
                except httpx.ConnectError as err:
                    if i + 1 == len(plan.urls):
                        raise PaddockConnectionError(plan.origin, f"Could not reach {plan.origin}: {describe(err)}.") from None
                except httpx.TransportError as err:
                    raise PaddockConnectionError(plan.origin, f"Could not reach {plan.origin}: {describe(err)}.") from None
            assert res is not None
            try:
                yield res
            finally:
                res.close()

    def fetch(
        self, path: str = "/", method: str = "GET", headers: Optional[Mapping[str, str]] = None, content: Optional[Content] = None
    ) -> httpx.Response:
        """Requests ``path`` (with its query) of the program through the preview, the token sent as X-Paddock-Preview-Token.

        Answers the program's response, its body read (use :meth:`stream` for a large one). A
        redirect is answered, not followed, so the token goes to the preview's host alone.
        """
        with self.stream(path, method, headers, content) as res:
            try:
                res.read()
            except httpx.TransportError as err:
                raise PaddockConnectionError(self.url, f"The answer of {self.url} broke off: {describe(err)}.") from None
            return res


class AsyncPreview(_PreviewFields):
    """A previewed port with one of its tokens; ``await fetch()`` reaches the program through it."""

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str = "/", method: str = "GET", headers: Optional[Mapping[str, str]] = None, content: Optional[AsyncContent] = None
    ) -> AsyncIterator[httpx.Response]:
        """Like :meth:`fetch`, with the body unread: iterate ``aiter_bytes()`` in the block; leaving it closes the connection."""
        plan = _plan(self.url, path, self.token, headers)
        async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False, trust_env=plan.trust_env) as http:
            res: Optional[httpx.Response] = None
            for i, url in enumerate(plan.urls):
                request = http.build_request(method, url, headers=plan.headers, content=content, extensions=plan.extensions)
                try:
                    res = await http.send(request, stream=True)
                    break
                except httpx.ConnectError as err:
                    if i + 1 == len(plan.urls):
                        raise PaddockConnectionError(plan.origin, f"Could not reach {plan.origin}: {describe(err)}.") from None
                except httpx.TransportError as err:
                    raise PaddockConnectionError(plan.origin, f"Could not reach {plan.origin}: {describe(err)}.") from None
            assert res is not None
            try:
                yield res
            finally:
                await res.aclose()

    async def fetch(
        self, path: str = "/", method: str = "GET", headers: Optional[Mapping[str, str]] = None, content: Optional[AsyncContent] = None
    ) -> httpx.Response:
        """Requests ``path`` (with its query) of the program through the preview, the token sent as X-Paddock-Preview-Token.

        Answers the program's response, its body read (use :meth:`stream` for a large one). A
        redirect is answered, not followed, so the token goes to the preview's host alone.
        """
        async with self.stream(path, method, headers, content) as res:
            try:
                await res.aread()
            except httpx.TransportError as err:
                raise PaddockConnectionError(self.url, f"The answer of {self.url} broke off: {describe(err)}.") from None
            return res


class Previews:
    """The sandbox's ports reachable from outside at URLs of their own (``sbx.previews``)."""

    def __init__(self, transport: SyncTransport, sandbox_id: str) -> None:
        self._t = transport
        self._sandbox_id = sandbox_id

    def create(self, port: int, public: Optional[bool] = None, expires_in_seconds: Optional[float] = None) -> Preview:
        """Makes ``port`` (one a program in the sandbox listens on) reachable at its preview URL, with a new token.

        A new preview is private unless ``public=True``; a port already previewed keeps its
        preview (``public`` changes it when given) and gets a new token, earlier ones staying valid
        until their own expiry. ``expires_in_seconds`` is the new token's lifetime.
        """
        created = self._t.json(r.create_preview(self._sandbox_id, port, public, expires_in_seconds))
        return Preview(cast(t.CreatePreviewResponse, created), self._t.timeout)

    def list(self) -> List[t.ListPreviewsResponseData]:
        """The sandbox's previewed ports, by port (never a token)."""
        return cast(t.ListPreviewsResponse, self._t.json(r.list_previews(self._sandbox_id)))["data"]

    def remove(self, port: int) -> None:
        """Removes the port's preview: every token of it stops at once, and connections open through it are closed."""
        self._t.json(r.delete_preview(self._sandbox_id, port))


class AsyncPreviews:
    """The sandbox's ports reachable from outside at URLs of their own (``sbx.previews``), awaited."""

    def __init__(self, transport: AsyncTransport, sandbox_id: str) -> None:
        self._t = transport
        self._sandbox_id = sandbox_id

    async def create(self, port: int, public: Optional[bool] = None, expires_in_seconds: Optional[float] = None) -> AsyncPreview:
        """Makes ``port`` (one a program in the sandbox listens on) reachable at its preview URL, with a new token.

        A new preview is private unless ``public=True``; a port already previewed keeps its
        preview (``public`` changes it when given) and gets a new token, earlier ones staying valid
        until their own expiry. ``expires_in_seconds`` is the new token's lifetime.
        """
        created = await self._t.json(r.create_preview(self._sandbox_id, port, public, expires_in_seconds))
        return AsyncPreview(cast(t.CreatePreviewResponse, created), self._t.timeout)

    async def list(self) -> List[t.ListPreviewsResponseData]:
        """The sandbox's previewed ports, by port (never a token)."""
        return cast(t.ListPreviewsResponse, await self._t.json(r.list_previews(self._sandbox_id)))["data"]

    async def remove(self, port: int) -> None:
        """Removes the port's preview: every token of it stops at once, and connections open through it are closed."""
        await self._t.json(r.delete_preview(self._sandbox_id, port))
