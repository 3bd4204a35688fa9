"""A sandbox's snapshots: copies of its /workspace that outlive it (``sbx.snapshots``)."""

from typing import List, Optional, cast

from . import _routes as r
from . import _types as t
from ._http import AsyncTransport, SyncTransport


class Snapshots:
    """Copies of the sandbox's /workspace that outlive it; ``Sandbox.create(snapshot=...)`` starts from one."""

    def __init__(self, transport: SyncTransport, sandbox_id: str) -> None:
        self._t = transport
        self._sandbox_id = sandbox_id

    def create(self, name: Optional[str] = None, *, wait: bool = True) -> t.Snapshot:
        """Copies the workspace as it is now; answers the snapshot once ready (``wait=False``: at once, pending)."""
        return cast(t.Snapshot, self._t.json(r.create_snapshot(self._sandbox_id, name, wait)))

    def list(self) -> List[t.Snapshot]:
        """The account's snapshots taken of this sandbox, newest first."""
        out: List[t.Snapshot] = []
        after: Optional[str] = None
        while True:
            page = cast(t.SnapshotList, self._t.json(r.snapshot_page(None, after)))
            out.extend(s for s in cast(List[t.Snapshot], page["data"]) if s["sandboxId"] == self._sandbox_id)
            after = page["next"]
            if not after:
                return out


class AsyncSnapshots:
    """Copies of the sandbox's /workspace that outlive it, awaited; ``AsyncSandbox.create(snapshot=...)`` starts from one."""

    def __init__(self, transport: AsyncTransport, sandbox_id: str) -> None:
        self._t = transport
        self._sandbox_id = sandbox_id

    async def create(self, name: Optional[str] = None, *, wait: bool = True) -> t.Snapshot:
        """Copies the workspace as it is now; answers the snapshot once ready (``wait=False``: at once, pending)."""
        return cast(t.Snapshot, await self._t.json(r.create_snapshot(self._sandbox_id, name, wait)))

    async def list(self) -> List[t.Snapshot]:
        """The account's snapshots taken of this sandbox, newest first."""
        out: List[t.Snapshot] = []
        after: Optional[str] = None
        while True:
            page = cast(t.SnapshotList, await self._t.json(r.snapshot_page(None, after)))
            out.extend(s for s in cast(List[t.Snapshot], page["data"]) if s["sandboxId"] == self._sandbox_id)
            after = page["next"]
            if not after:
                return out
