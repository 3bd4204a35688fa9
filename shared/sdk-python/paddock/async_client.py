"""``AsyncPaddock``: the asynchronous client of the account-wide routes, and the connection under an AsyncSandbox."""

import codecs
import json
from typing import Any, Union, AsyncIterator, List, Optional, cast

import httpx

from . import _routes as r
from . import _types as t
from ._config import resolve_settings
from ._http import AsyncTransport, SseFrames, _Core

DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)


class AsyncPaddock:
    """A connection to Paddock with an API key: the account, secrets, allowlist, events and webhooks.

    The base URL and key come from the arguments, else ``PADDOCK_API_KEY`` / ``PADDOCK_BASE_URL``,
    else the CLI's config file (``paddock config set-url`` / ``set-key``). Plain http:// is refused
    except for localhost and 127.0.0.1. An idempotent call is retried (``retries`` times, default 2)
    after a 429 or 503 whose Retry-After is at most ``max_retry_wait`` seconds. Use it as a context
    manager, or call :meth:`close`, to release its connections. ``timeout`` (seconds, or an
    ``httpx.Timeout``) bounds each request; a streamed command's output has no read timeout.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        *,
        retries: int = 2,
        max_retry_wait: float = 30.0,
        timeout: Union[float, httpx.Timeout] = DEFAULT_TIMEOUT,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        settings = resolve_settings(api_key, base_url)
        #: The base URL in effect, normalised (no trailing slash).
        self.base_url = settings.base_url
        timeouts = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout, connect=min(10.0, timeout))
        self._t = AsyncTransport(_Core(settings.base_url, settings.api_key, retries, max_retry_wait), timeouts, http_client)

    async def __aenter__(self) -> "AsyncPaddock":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the client's connections (not one given as ``http_client``)."""
        await self._t.close()

    async def account(self) -> t.Account:
        """The account and its usage this month against its limits."""
        return cast(t.Account, await self._t.json(r.account()))

    # ---- secrets ----

    async def create_secret(
        self, name: str, value: str, *, sandbox_id: Optional[str] = None, inject: Optional[t.CreateSecretRequestInject] = None
    ) -> t.CreateSecretResponse:
        """Stores a secret (encrypted; never answered back), account-wide or for one sandbox.

        With ``inject`` (``{"hosts": ["api.example.com"], "header": "Authorization", "format": "Bearer {value}"}``,
        header and format optional) it is brokered: in no environment, set by the sandbox's egress as
        that header on its HTTPS requests to those hosts.
        """
        return cast(t.CreateSecretResponse, await self._t.json(r.create_secret(name, value, sandbox_id, inject)))

    async def list_secrets(self, *, sandbox_id: Optional[str] = None) -> List[t.ListSecretsResponseData]:
        """The secrets' names (never their values), account-wide or for one sandbox."""
        return cast(t.ListSecretsResponse, await self._t.json(r.list_secrets(sandbox_id)))["data"]

    async def delete_secret(self, name: str, *, sandbox_id: Optional[str] = None) -> None:
        """Deletes a secret."""
        await self._t.json(r.delete_secret(name, sandbox_id))

    # ---- allowlist ----

    async def get_allowlist(self) -> t.GetAllowlistResponse:
        """The programs every exec may run (empty: every command is allowed)."""
        return cast(t.GetAllowlistResponse, await self._t.json(r.get_allowlist()))

    async def set_allowlist(self, commands: List[str]) -> t.GetAllowlistResponse:
        """Replaces the allowlist with these program names."""
        return cast(t.GetAllowlistResponse, await self._t.json(r.set_allowlist(commands)))

    async def clear_allowlist(self) -> None:
        """Removes the allowlist: every command is allowed again."""
        await self._t.json(r.clear_allowlist())

    # ---- snapshots ----

    async def create_snapshot(self, sandbox_id: str, *, name: Optional[str] = None, wait: bool = True) -> t.Snapshot:
        """Copies the running sandbox's /workspace into a snapshot; answers it ready (``wait=False``: at once, pending)."""
        return cast(t.Snapshot, await self._t.json(r.create_snapshot(sandbox_id, name, wait)))

    async def snapshot_page(self, *, limit: Optional[int] = None, after: Optional[str] = None) -> t.SnapshotList:
        """One page of the account's snapshots, newest first; its ``next`` is the following page's ``after``."""
        return cast(t.SnapshotList, await self._t.json(r.snapshot_page(limit, after)))

    async def snapshots(self, *, page_size: int = 100) -> AsyncIterator[t.Snapshot]:
        """Every snapshot of the account, newest first, fetched a page at a time as the loop asks."""
        after: Optional[str] = None
        while True:
            page = await self.snapshot_page(limit=page_size, after=after)
            for snapshot in page["data"]:
                yield snapshot
            after = page["next"]
            if not after:
                return

    async def get_snapshot(self, snapshot_id: str) -> t.Snapshot:
        """One snapshot of the account."""
        return cast(t.Snapshot, await self._t.json(r.get_snapshot(snapshot_id)))

    async def delete_snapshot(self, snapshot_id: str) -> None:
        """Deletes a snapshot; sandboxes started from it keep their workspaces."""
        await self._t.json(r.delete_snapshot(snapshot_id))

    # ---- events and webhooks ----

    async def list_events(self, *, after: Optional[str] = None, limit: Optional[int] = None) -> List[t.ListEventsResponseData]:
        """The account's events, oldest first, after the event id ``after`` when given."""
        return cast(t.ListEventsResponse, await self._t.json(r.list_events(after, limit)))["data"]

    async def events(self, *, after: Optional[str] = None, page_size: int = 100) -> AsyncIterator[t.ListEventsResponseData]:
        """Every event after ``after`` (or from the first), fetched a page at a time as the loop asks."""
        while True:
            page = await self.list_events(after=after, limit=page_size)
            for event in page:
                yield event
            if len(page) < page_size:
                return
            after = page[-1]["id"]

    async def stream_events(self, *, after: Optional[str] = None) -> AsyncIterator[t.ListEventsResponseData]:
        """The account's events as they happen (Server-Sent Events), after the event id ``after``, else from now.

        Ends when the server closes the stream; resume with the last id seen. Leaving the loop closes it.
        """
        frames = SseFrames()
        decoder = codecs.getincrementaldecoder("utf-8")()
        async for chunk in self._t.bytes_of(r.stream_events(after), "event stream"):
            for data in frames.feed(decoder.decode(chunk)):
                yield cast(t.ListEventsResponseData, json.loads(data))

    async def create_webhook(self, url: str, *, events: Optional[List[str]] = None, description: Optional[str] = None) -> t.CreateWebhookResponse:
        """Adds a webhook endpoint; its signing secret is in the answer, this once."""
        return cast(t.CreateWebhookResponse, await self._t.json(r.create_webhook(url, events, description)))

    async def list_webhooks(self) -> List[t.ListWebhooksResponseData]:
        """The account's webhook endpoints (without their secrets)."""
        return cast(t.ListWebhooksResponse, await self._t.json(r.list_webhooks()))["data"]

    async def delete_webhook(self, webhook_id: str) -> None:
        """Removes a webhook endpoint."""
        await self._t.json(r.delete_webhook(webhook_id))

    async def test_webhook(self, webhook_id: str) -> t.TestWebhookResponse:
        """Sends a webhook.test event to the endpoint; answers the event."""
        return cast(t.TestWebhookResponse, await self._t.json(r.test_webhook(webhook_id)))

    async def rotate_webhook_secret(self, webhook_id: str) -> t.RotateWebhookSecretResponse:
        """A new signing secret, shown this once; the former one also signs for a while."""
        return cast(t.RotateWebhookSecretResponse, await self._t.json(r.rotate_webhook_secret(webhook_id)))

    async def list_deliveries(self, webhook_id: str, *, limit: Optional[int] = None) -> List[t.ListWebhookDeliveriesResponseData]:
        """The endpoint's recent delivery attempts."""
        return cast(t.ListWebhookDeliveriesResponse, await self._t.json(r.list_deliveries(webhook_id, limit)))["data"]
