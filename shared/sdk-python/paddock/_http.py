"""The plumbing under both clients: one request description, one retry rule, one error reading.

The retry rule is the TypeScript SDK's (shared/sdk/client.ts): an idempotent call (GET, PUT,
DELETE, and a create that carries an Idempotency-Key) whose body can be sent again is retried after
a 429 or 503 that says, in Retry-After, when to come back (up to ``max_retry_wait`` seconds), and
a GET also after the API could not be reached, with a short backoff. A streamed body is never sent
twice.
"""

import asyncio
import importlib
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, Iterator, List, Mapping, Optional, Union, cast

import httpx

from ._errors import PaddockApiError, PaddockConnectionError, PaddockError

__version__ = "0.1.0"

NDJSON = "application/x-ndjson"
_UNSET: Any = object()

Query = Mapping[str, Union[str, int, float, bool, None]]


@dataclass
class Request:
    """One call of the API, before it is sent."""

    method: str
    path: str
    query: Optional[Query] = None
    body: Any = _UNSET
    #: Bytes sent as they are (a file, an archive); an iterator is never sent twice.
    content: Any = None
    content_type: Optional[str] = None
    headers: Dict[str, str] = field(default_factory=dict)
    accept: str = "application/json"
    #: A stream the server ends (exec output, a followed process): no read timeout.
    long_read: bool = False


def _query_params(query: Optional[Query]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for name, value in (query or {}).items():
        if value is None:
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _retry_after(res: httpx.Response) -> Optional[int]:
    header = res.headers.get("retry-after")
    return int(header) if header is not None and header.isdigit() else None


def api_error_of(res: httpx.Response) -> PaddockApiError:
    """The error an unsuccessful response stands for (its body already read)."""
    retry_after = _retry_after(res)
    request_id = res.headers.get("x-request-id")
    problem: Optional[Dict[str, Any]] = None
    try:
        parsed = json.loads(res.content)
        if isinstance(parsed, dict) and isinstance(parsed.get("code"), str):
            problem = parsed
    except ValueError:
        pass  # not a problem document: described below from the status
    if problem is not None:
        detail = problem.get("detail")
        title = problem.get("title")
        rid = problem.get("requestId")
        return PaddockApiError(
            status=res.status_code,
            code=problem["code"],
            detail=detail if isinstance(detail, str) else str(title),
            title=title if isinstance(title, str) else None,
            request_id=rid if isinstance(rid, str) else request_id,
            retry_after=retry_after,
            problem=problem,
        )
    reason = f" {res.reason_phrase}" if res.reason_phrase else ""
    return PaddockApiError(
        status=res.status_code,
        code="unexpected_response",
        detail=f"The server answered {res.status_code}{reason} without a problem document.",
        request_id=request_id,
        retry_after=retry_after,
    )


def stream_error_of(event: Mapping[str, Any]) -> PaddockApiError:
    """An ``error`` line of a stream that had already started (no status to give)."""
    return PaddockApiError(status=None, code=str(event.get("code")), detail=str(event.get("detail")))


class _Core:
    """What both transports share: the base URL, credential, headers and the retry rule."""

    def __init__(self, base_url: str, api_key: Optional[str], retries: int, max_retry_wait: float) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self.user_agent = f"paddock-python/{__version__}"

    def prepare(self, req: Request) -> Dict[str, Any]:
        if not self.api_key:
            raise PaddockError(f"{req.method} {req.path} needs an API key, and the client has none.")
        headers = {
            "Accept": req.accept,
            "User-Agent": self.user_agent,
            "Authorization": f"Bearer {self.api_key}",
            **req.headers,
        }
        kwargs: Dict[str, Any] = {"headers": headers, "params": _query_params(req.query)}
        if req.body is not _UNSET:
            headers["Content-Type"] = "application/json"
            kwargs["content"] = json.dumps(req.body, separators=(",", ":")).encode()
        elif req.content is not None:
            headers["Content-Type"] = req.content_type or "application/octet-stream"
            kwargs["content"] = req.content
        return kwargs

    def retries_for(self, req: Request) -> int:
        replayable = req.content is None or isinstance(req.content, (bytes, bytearray, memoryview))
        idempotent = req.method in ("GET", "PUT", "DELETE") or "Idempotency-Key" in req.headers
        return self.retries if idempotent and replayable else 0

    def wait_before_retry(self, err: PaddockApiError, attempt: int, retries: int) -> Optional[float]:
        """Seconds to wait before sending again, or None when the error is to be raised."""
        if attempt >= retries or err.status not in (429, 503) or err.retry_after is None:
            return None
        return float(err.retry_after) if err.retry_after <= self.max_retry_wait else None

    def unreachable(self, err: Exception) -> PaddockConnectionError:
        return PaddockConnectionError(self.base_url, f"Could not reach {self.base_url}: {describe(err)}.")

    def broken(self, what: str, err: Exception) -> PaddockConnectionError:
        return PaddockConnectionError(self.base_url, f"The {what} broke off: {describe(err)}.")


def describe(err: BaseException) -> str:
    text = str(err)
    return text or type(err).__name__


def json_of(core: _Core, req: Request, res: httpx.Response) -> Any:
    if res.status_code == 204 or not res.content:
        return None
    try:
        return json.loads(res.content)
    except ValueError:
        raise PaddockConnectionError(
            core.base_url, f"{req.method} {req.path} answered {res.status_code} with a body that is not JSON."
        ) from None


_NO_DELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _no_delay(sock: Any) -> None:
    if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(*_NO_DELAY)


# Idle connections are dropped well before the API's keep-alive timeout (5 s by default): a request
# sent on one the server is closing at that moment is lost with "Server disconnected".
_KEEPALIVE_EXPIRY_SECONDS = 2.0


def _limits() -> httpx.Limits:
    return httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=_KEEPALIVE_EXPIRY_SECONDS)


def _may_send_again(req: Request, err: httpx.TransportError) -> bool:
    """A GET, whatever failed; another request that retries_for allows, when it never got an answer
    because its connection would not open or was closed under it (the server then did nothing, or
    the request is idempotent)."""
    return req.method == "GET" or isinstance(err, (httpx.ConnectError, httpx.RemoteProtocolError))


def no_delay_transport() -> httpx.HTTPTransport:
    """A transport whose connections send at once (TCP_NODELAY).

    httpx writes a request's headers and its body apart; with Nagle's algorithm on, the body then
    waits for the server's delayed ACK, and every POST with a body takes 40 ms more (measured: an
    exec of `true` 53 ms, 10 ms without). httpx 0.24+ takes the option; on 0.23 the connection
    pool gets a network backend that sets it; an httpx that fits neither keeps its default.
    """
    make: Any = httpx.HTTPTransport
    try:
        return cast(httpx.HTTPTransport, make(socket_options=[_NO_DELAY], limits=_limits()))
    except TypeError:
        pass
    transport = httpx.HTTPTransport(limits=_limits())
    _give_backend(transport, "httpcore.backends.sync", "SyncBackend", is_async=False)
    return transport


def async_no_delay_transport() -> httpx.AsyncHTTPTransport:
    """The asynchronous transport of no_delay_transport."""
    make: Any = httpx.AsyncHTTPTransport
    try:
        return cast(httpx.AsyncHTTPTransport, make(socket_options=[_NO_DELAY], limits=_limits()))
    except TypeError:
        pass
    transport = httpx.AsyncHTTPTransport(limits=_limits())
    _give_backend(transport, "httpcore.backends.auto", "AutoBackend", is_async=True)
    return transport


def _give_backend(transport: Any, module: str, name: str, is_async: bool) -> None:
    """httpcore 0.16's pool, with a network backend that sets TCP_NODELAY on each connection."""
    pool = getattr(transport, "_pool", None)
    try:
        base: Any = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # another httpcore: its default
        return
    if pool is None or not hasattr(pool, "_network_backend"):
        return

    def connect_tcp(self: Any, *args: Any, **kwargs: Any) -> Any:
        stream = base.connect_tcp(self, *args, **kwargs)
        _no_delay(stream.get_extra_info("socket"))
        return stream

    async def aconnect_tcp(self: Any, *args: Any, **kwargs: Any) -> Any:
        stream = await base.connect_tcp(self, *args, **kwargs)
        _no_delay(stream.get_extra_info("socket"))
        return stream

    backend = type(f"NoDelay{name}", (base,), {"connect_tcp": aconnect_tcp if is_async else connect_tcp})
    pool._network_backend = backend()


def _timeout(base: httpx.Timeout, req: Request) -> httpx.Timeout:
    return httpx.Timeout(connect=base.connect, read=None, write=base.write, pool=base.pool) if req.long_read else base


class SyncTransport:
    """Sends requests with an ``httpx.Client``, retrying as the rule says."""

    def __init__(self, core: _Core, timeout: httpx.Timeout, http_client: Optional[httpx.Client] = None) -> None:
        self.core = core
        self.timeout = timeout
        self._owned = http_client is None
        self.http = http_client or httpx.Client(timeout=timeout, follow_redirects=False, transport=no_delay_transport())

    def send(self, req: Request) -> httpx.Response:
        """Sends one request; answers the (unread, streaming) response when it is a success, else raises."""
        kwargs = self.core.prepare(req)
        url = self.core.base_url + req.path
        retries = self.core.retries_for(req)
        attempt = 0
        while True:
            try:
                request = self.http.build_request(req.method, url, timeout=_timeout(self.timeout, req), **kwargs)
                res = self.http.send(request, stream=True)
            except httpx.TransportError as err:
                if _may_send_again(req, err) and attempt < retries:
                    time.sleep(0.25 * 2**attempt)
                    attempt += 1
                    continue
                raise self.core.unreachable(err) from None
            if res.is_success:
                return res
            try:
                res.read()
            except httpx.TransportError:
                pass
            finally:
                res.close()
            error = api_error_of(res)
            wait = self.core.wait_before_retry(error, attempt, retries)
            if wait is None:
                raise error
            time.sleep(wait)
            attempt += 1

    def json(self, req: Request) -> Any:
        """Sends a request and answers its JSON body (None for an empty one)."""
        res = self.send(req)
        try:
            res.read()
        except httpx.TransportError as err:
            raise self.core.broken("answer", err) from None
        finally:
            res.close()
        return json_of(self.core, req, res)

    def bytes_of(self, req: Request, what: str, chunk_size: Optional[int] = None) -> Iterator[bytes]:
        """The response's body in chunks as they come; leaving early closes the connection."""
        res = self.send(req)
        try:
            cut = _RangeCut(req, res)
            for chunk in res.iter_bytes(chunk_size):
                piece = cut.take(chunk)
                if piece:
                    yield piece
                if cut.done:
                    return
        except httpx.TransportError as err:
            raise self.core.broken(what, err) from None
        finally:
            res.close()

    def lines(self, req: Request, what: str) -> Iterator[Dict[str, Any]]:
        """The JSON objects of an NDJSON answer, one a line, as they come."""
        res = self.send(req)
        splitter = _Lines()
        try:
            for chunk in res.iter_bytes():
                for line in splitter.feed(chunk):
                    yield _parse_line(self.core, line, what)
            for line in splitter.end():
                yield _parse_line(self.core, line, what)
        except httpx.TransportError as err:
            raise self.core.broken(what, err) from None
        finally:
            res.close()

    def close(self) -> None:
        if self._owned:
            self.http.close()


class AsyncTransport:
    """Sends requests with an ``httpx.AsyncClient``, retrying as the rule says."""

    def __init__(self, core: _Core, timeout: httpx.Timeout, http_client: Optional[httpx.AsyncClient] = None) -> None:
        self.core = core
        self.timeout = timeout
        self._owned = http_client is None
        self.http = http_client or httpx.AsyncClient(timeout=timeout, follow_redirects=False, transport=async_no_delay_transport())

    async def send(self, req: Request) -> httpx.Response:
        """Sends one request; answers the (unread, streaming) response when it is a success, else raises."""
        kwargs = self.core.prepare(req)
        url = self.core.base_url + req.path
        retries = self.core.retries_for(req)
        attempt = 0
        while True:
            try:
                request = self.http.build_request(req.method, url, timeout=_timeout(self.timeout, req), **kwargs)
                res = await self.http.send(request, stream=True)
            except httpx.TransportError as err:
                if _may_send_again(req, err) and attempt < retries:
                    await asyncio.sleep(0.25 * 2**attempt)
                    attempt += 1
                    continue
                raise self.core.unreachable(err) from None
            if res.is_success:
                return res
            try:
                await res.aread()
            except httpx.TransportError:
                pass
            finally:
                await res.aclose()
            error = api_error_of(res)
            wait = self.core.wait_before_retry(error, attempt, retries)
            if wait is None:
                raise error
            await asyncio.sleep(wait)
            attempt += 1

    async def json(self, req: Request) -> Any:
        """Sends a request and answers its JSON body (None for an empty one)."""
        res = await self.send(req)
        try:
            await res.aread()
        except httpx.TransportError as err:
            raise self.core.broken("answer", err) from None
        finally:
            await res.aclose()
        return json_of(self.core, req, res)

    async def bytes_of(self, req: Request, what: str, chunk_size: Optional[int] = None) -> AsyncIterator[bytes]:
        """The response's body in chunks as they come; leaving early closes the connection."""
        res = await self.send(req)
        try:
            cut = _RangeCut(req, res)
            async for chunk in res.aiter_bytes(chunk_size):
                piece = cut.take(chunk)
                if piece:
                    yield piece
                if cut.done:
                    return
        except httpx.TransportError as err:
            raise self.core.broken(what, err) from None
        finally:
            await res.aclose()

    async def lines(self, req: Request, what: str) -> AsyncIterator[Dict[str, Any]]:
        """The JSON objects of an NDJSON answer, one a line, as they come."""
        res = await self.send(req)
        splitter = _Lines()
        try:
            async for chunk in res.aiter_bytes():
                for line in splitter.feed(chunk):
                    yield _parse_line(self.core, line, what)
            for line in splitter.end():
                yield _parse_line(self.core, line, what)
        except httpx.TransportError as err:
            raise self.core.broken(what, err) from None
        finally:
            await res.aclose()

    async def close(self) -> None:
        if self._owned:
            await self.http.aclose()


class _RangeCut:
    """The bytes a Range asked for, when the server answered the whole body instead (200, not 206)."""

    def __init__(self, req: Request, res: httpx.Response) -> None:
        self.skip, self.left = 0, -1  # -1: no end
        self.done = False
        asked = req.headers.get("Range", "")
        if asked.startswith("bytes=") and res.status_code == 200:
            first, _, last = asked[len("bytes="):].partition("-")
            self.skip = int(first)
            self.left = int(last) - int(first) + 1 if last else -1

    def take(self, chunk: bytes) -> bytes:
        if self.skip:
            dropped = min(self.skip, len(chunk))
            chunk, self.skip = chunk[dropped:], self.skip - dropped
        if self.left >= 0:
            chunk, self.left = chunk[: self.left], self.left - min(self.left, len(chunk))
            self.done = self.left == 0
        return chunk


class SseFrames:
    """The data of each Server-Sent Events frame that has some (comments and retry lines skipped)."""

    def __init__(self) -> None:
        self._buffered = ""

    def feed(self, text: str) -> List[str]:
        self._buffered += text.replace("\r\n", "\n").replace("\r", "\n")
        out: List[str] = []
        while "\n\n" in self._buffered:
            frame, self._buffered = self._buffered.split("\n\n", 1)
            data = [line[5:].lstrip(" ") if line.startswith("data: ") else line[5:] for line in frame.split("\n") if line.startswith("data:")]
            if data:
                out.append("\n".join(data))
        return out


class _Lines:
    """Splits an NDJSON body into its lines as bytes arrive (always UTF-8, whatever the headers say)."""

    def __init__(self) -> None:
        self._buffered = b""

    def feed(self, chunk: bytes) -> List[bytes]:
        self._buffered += chunk
        if b"\n" not in chunk:
            return []
        *lines, self._buffered = self._buffered.split(b"\n")
        return [line for line in lines if line.strip()]

    def end(self) -> List[bytes]:
        rest, self._buffered = self._buffered, b""
        return [rest] if rest.strip() else []


def _parse_line(core: _Core, line: bytes, what: str) -> Dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        raise PaddockConnectionError(core.base_url, f"The {what} sent a line that is not JSON.") from None
    if not isinstance(value, dict):
        raise PaddockConnectionError(core.base_url, f"The {what} sent a line that is not an object.")
    return value
