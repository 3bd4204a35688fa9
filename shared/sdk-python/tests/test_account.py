"""The account-wide routes through Paddock: account, secrets, allowlist, events, webhooks."""

import asyncio
import time

from conftest import live
from paddock import AsyncPaddock, Paddock, PaddockApiError, Sandbox

import pytest

pytestmark = live


def test_account_and_usage(client: Paddock):
    a = client.account()
    assert a["id"] and "@" in a["email"]
    assert a["usage"]["concurrentSandboxes"]["limit"] >= 1


def test_secrets_reach_commands_and_are_never_answered_back(client: Paddock):
    client.create_secret("PY_SDK_TOKEN", "s3cret-value")
    try:
        listed = client.list_secrets()
        assert [s["name"] for s in listed] == ["PY_SDK_TOKEN"]
        assert "s3cret-value" not in repr(listed)
        with Sandbox.create(client=client) as sbx:
            # Output masks secrets: compare inside the sandbox.
            assert sbx.commands.run('test "$PY_SDK_TOKEN" = s3cret-value && echo same').stdout == "same\n"
    finally:
        client.delete_secret("PY_SDK_TOKEN")
    assert client.list_secrets() == []
    with pytest.raises(PaddockApiError) as err:
        client.delete_secret("PY_SDK_TOKEN")
    assert err.value.code == "secret_not_found"


def test_the_allowlist_is_set_read_and_cleared(client: Paddock):
    assert client.set_allowlist(["ls", "echo", "ls"])["commands"] == ["echo", "ls"]
    try:
        assert client.get_allowlist()["commands"] == ["echo", "ls"]
    finally:
        client.clear_allowlist()
    assert client.get_allowlist()["commands"] == []


def test_events_record_what_happened(client: Paddock):
    with Sandbox.create(client=client) as sbx:
        kept = sbx.id
    deadline = time.monotonic() + 10
    while True:
        types = [(e["type"], e["data"].get("sandbox", {}).get("id")) for e in client.events()]
        if ("sandbox.destroyed", kept) in types or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ("sandbox.created", kept) in types and ("sandbox.destroyed", kept) in types
    first = client.list_events(limit=1)
    assert len(first) == 1
    assert all(e["id"] != first[0]["id"] for e in client.list_events(after=first[0]["id"]))


def test_the_event_stream_resumes_after_an_event_and_follows_new_ones(client: Paddock):
    past = client.list_events()
    assert len(past) >= 2
    stream = client.stream_events(after=past[0]["id"])
    assert next(stream)["id"] == past[1]["id"]
    stream.close()

    async def follow() -> None:
        async with AsyncPaddock() as c:
            # From the newest event on: the create below comes to the open stream, replayed or live.
            live = c.stream_events(after=client.list_events()[-1]["id"])
            waiting = asyncio.ensure_future(live.__anext__())
            with Sandbox.create(client=client) as sbx:
                event = await asyncio.wait_for(waiting, 30)
                assert event["type"] == "sandbox.created" and event["data"]["sandbox"]["id"] == sbx.id
            await live.aclose()

    asyncio.run(follow())


def test_webhooks_added_listed_rotated_and_removed(client: Paddock):
    made = client.create_webhook("https://hooks.example/paddock", events=["sandbox.destroyed"], description="py")
    assert made["secret"].startswith("whsec_")
    listed = client.list_webhooks()
    assert [(w["id"], w["url"]) for w in listed] == [(made["id"], "https://hooks.example/paddock")]
    assert "secret" not in listed[0]
    rotated = client.rotate_webhook_secret(made["id"])
    assert rotated["secret"] != made["secret"]
    assert client.list_deliveries(made["id"], limit=5) == []
    client.delete_webhook(made["id"])
    assert client.list_webhooks() == []
    with pytest.raises(PaddockApiError) as err:
        client.delete_webhook(made["id"])
    assert err.value.code == "webhook_not_found"
