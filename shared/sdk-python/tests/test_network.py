"""A sandbox's egress policy: set at its create and changed while it runs."""

import asyncio

import pytest

from conftest import live
from paddock import AsyncPaddock, AsyncSandbox, Paddock, PaddockApiError, Sandbox

pytestmark = live


def test_network_at_create_and_set_network_show_in_the_sandbox(client: Paddock):
    allow = {"egress": {"allow": ["198.51.100.0/24:443"]}}
    with Sandbox.create(client=client, network=allow) as sbx:
        assert sbx.info()["network"] == allow
        assert sbx.set_network({"egress": "none"})["network"] == {"egress": "none"}
        assert sbx.info()["network"] == {"egress": "none"}
        with pytest.raises(PaddockApiError) as refused:
            sbx.set_network({"egress": {"allow": ["*.org"]}})
        assert (refused.value.status, refused.value.code) == (400, "invalid_request")


def test_the_async_handle_sets_the_network_too():
    async def main() -> None:
        async with AsyncPaddock() as client:
            async with await AsyncSandbox.create(client=client, network={"egress": "none"}) as sbx:
                changed = await sbx.set_network({"egress": {"allow": ["203.0.113.9:80"]}})
                assert changed["network"] == {"egress": {"allow": ["203.0.113.9:80"]}}

    asyncio.run(main())
