"""Snapshots: a workspace kept past its sandbox, and sandboxes started from it."""

import asyncio
import time

import pytest

from conftest import live
from paddock import AsyncPaddock, AsyncSandbox, Paddock, PaddockApiError, Sandbox

pytestmark = live


def test_a_snapshot_keeps_the_workspace_for_a_new_sandbox_and_is_deleted(client: Paddock, sbx: Sandbox):
    sbx.files.write("kept/state.txt", "before the snapshot\n")
    snapshot = sbx.snapshots.create("py")
    assert (snapshot["status"], snapshot["name"], snapshot["sandboxId"]) == ("ready", "py", sbx.id)
    assert snapshot["id"] in [s["id"] for s in sbx.snapshots.list()]
    assert snapshot["id"] in [s["id"] for s in client.snapshots(page_size=1)]
    with Sandbox.create(client=client, snapshot=snapshot["id"]) as forked:
        assert forked.files.read_text("kept/state.txt") == "before the snapshot\n"
    pending = client.create_snapshot(sbx.id, wait=False)
    assert pending["status"] == "pending"
    deadline = time.monotonic() + 30
    while client.get_snapshot(pending["id"])["status"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert client.get_snapshot(pending["id"])["status"] == "ready"
    for snapshot_id in (snapshot["id"], pending["id"]):
        client.delete_snapshot(snapshot_id)
    with pytest.raises(PaddockApiError) as gone:
        client.get_snapshot(snapshot["id"])
    assert (gone.value.status, gone.value.code) == (404, "snapshot_not_found")
    with pytest.raises(PaddockApiError) as refused:
        Sandbox.create(client=client, snapshot=snapshot["id"])
    assert refused.value.code == "snapshot_not_found"


def test_snapshot_on_destroy_keeps_the_workspace_the_destroyed_sandbox_names(client: Paddock):
    kept = Sandbox.create(client=client, snapshot_on_destroy=True)
    kept.files.write("last.txt", "at the end\n")
    assert kept.info()["snapshotOnDestroy"] is True
    ended = kept.destroy()
    assert ended["state"] == "destroyed"
    final = ended["finalSnapshotId"]
    assert final is not None and final.startswith("snap_")
    with Sandbox.create(client=client, snapshot=final) as following:
        assert following.files.read_text("last.txt") == "at the end\n"
    client.delete_snapshot(final)


def test_the_async_handle_takes_and_starts_from_a_snapshot():
    async def main() -> None:
        async with AsyncPaddock() as client:
            async with await AsyncSandbox.create(client=client) as sbx:
                await sbx.files.write("a.txt", "async kept\n")
                snapshot = await sbx.snapshots.create()
                assert snapshot["id"] in [s["id"] for s in await sbx.snapshots.list()]
                assert snapshot["id"] in [s["id"] async for s in client.snapshots()]
            async with await AsyncSandbox.create(client=client, snapshot=snapshot["id"]) as forked:
                assert await forked.files.read_text("a.txt") == "async kept\n"
            await client.delete_snapshot(snapshot["id"])
            with pytest.raises(PaddockApiError) as gone:
                await client.get_snapshot(snapshot["id"])
            assert gone.value.code == "snapshot_not_found"

    asyncio.run(main())
