"""Errors and retries against a loopback server that answers as told: offline, as the TypeScript SDK behaves."""

import asyncio

import pytest

from conftest import ok, problem
from paddock import AsyncPaddock, AsyncSandbox, Paddock, PaddockApiError, PaddockConnectionError, PaddockError, Sandbox

SANDBOX = {"id": "sbx_1", "state": "active", "status": "running", "image": "x", "createdAt": "", "readyAt": None, "expiresAt": "", "destroyedAt": None, "destroyReason": None, "failureMessage": None, "metadata": {}}


def test_a_get_answered_503_with_retry_after_is_retried_after_that_wait(fake_api):
    api = fake_api(lambda req, n: problem(503, "service_unavailable", "1") if n == 0 else ok(SANDBOX))
    sbx = Sandbox.connect("sbx_1", api_key="pdk_live_x", base_url=api.url)
    assert sbx.id == "sbx_1"
    assert len(api.seen) == 2
    assert api.seen[1]["at"] - api.seen[0]["at"] >= 0.95, "waited the Retry-After"
    assert api.seen[0]["headers"]["Authorization"] == "Bearer pdk_live_x"
    sbx.close()


def test_a_create_carries_an_idempotency_key_and_its_retry_the_same_one(fake_api):
    api = fake_api(lambda req, n: problem(429, "rate_limited", "0") if n == 0 else ok(SANDBOX, 201))
    sbx = Sandbox.create(api_key="pdk_live_x", base_url=api.url, image="img", env={"A": "1"}, metadata={"m": "v"}, timeout=90)
    assert [s["method"] for s in api.seen] == ["POST", "POST"]
    keys = [s["headers"].get("Idempotency-Key") for s in api.seen]
    assert keys[0] and keys[0] == keys[1]
    assert b'"timeoutSeconds":90' in api.seen[0]["body"] and b'"image":"img"' in api.seen[0]["body"]
    # A second create is a second sandbox: a key of its own.
    Sandbox.create(api_key="pdk_live_x", base_url=api.url).close()
    assert api.seen[2]["headers"]["Idempotency-Key"] != keys[0]
    sbx.close()


def test_a_post_without_an_idempotency_key_is_not_retried(fake_api):
    api = fake_api(lambda req, n: problem(429, "too_many_in_flight", "0"))
    sbx = Sandbox({"id": "sbx_1"}, Paddock(api_key="pdk_live_x", base_url=api.url), True)  # type: ignore
    with pytest.raises(PaddockApiError) as err:
        sbx.commands.run("true")
    assert (err.value.status, err.value.code, err.value.retry_after, err.value.request_id) == (429, "too_many_in_flight", 0, "req_1")
    assert len(api.seen) == 1
    sbx.close()


def test_retries_stop_after_the_limit_and_a_long_retry_after_is_raised_at_once(fake_api):
    api = fake_api(lambda req, n: problem(503, "service_unavailable", "0"))
    with Paddock(api_key="pdk_live_x", base_url=api.url, retries=2) as c, pytest.raises(PaddockApiError):
        c.account()
    assert len(api.seen) == 3
    slow = fake_api(lambda req, n: problem(429, "rate_limited", "120"))
    with Paddock(api_key="pdk_live_x", base_url=slow.url) as c, pytest.raises(PaddockApiError) as err:
        c.account()
    assert err.value.retry_after == 120 and len(slow.seen) == 1


def test_an_answer_without_a_problem_document_is_still_a_paddock_error(fake_api):
    api = fake_api(lambda req, n: (502, {"content-type": "text/html"}, b"<html>bad gateway</html>"))
    with Paddock(api_key="pdk_live_x", base_url=api.url) as c, pytest.raises(PaddockApiError) as err:
        c.account()
    assert (err.value.status, err.value.code) == (502, "unexpected_response")
    assert isinstance(err.value, PaddockError)


def test_a_request_whose_connection_closed_unanswered_is_sent_again_when_it_is_idempotent(fake_api):
    api = fake_api(lambda req, n: None if n == 0 else ok({**SANDBOX, "state": "destroyed"}))
    gone = Sandbox({"id": "sbx_1"}, Paddock(api_key="pdk_live_x", base_url=api.url), True)  # type: ignore
    assert gone.destroy()["state"] == "destroyed"
    assert [s["method"] for s in api.seen] == ["DELETE", "DELETE"]
    # An exec may have run: without an idempotency key it is never sent twice.
    dropped = fake_api(lambda req, n: None)
    sbx = Sandbox({"id": "sbx_1"}, Paddock(api_key="pdk_live_x", base_url=dropped.url), True)  # type: ignore
    with pytest.raises(PaddockConnectionError):
        sbx.commands.run("true")
    assert len(dropped.seen) == 1
    sbx.close()


def test_an_api_that_cannot_be_reached_is_a_connection_error():
    with Paddock(api_key="pdk_live_x", base_url="http://127.0.0.1:9", retries=0) as c, pytest.raises(PaddockConnectionError):
        c.account()


def test_ids_are_escaped_into_one_path_segment(fake_api):
    api = fake_api(lambda req, n: problem(404, "sandbox_not_found"))
    with pytest.raises(PaddockApiError):
        Sandbox.connect("../../v1/account?x=", api_key="pdk_live_x", base_url=api.url)
    assert api.seen[0]["path"] == "/v1/sandboxes/..%2F..%2Fv1%2Faccount%3Fx%3D"


def test_async_retries_the_same_way_and_raises_the_same_errors(fake_api):
    busy = fake_api(lambda req, n: problem(503, "service_unavailable", "0") if n < 2 else ok(SANDBOX, 201))
    missing = fake_api(lambda req, n: problem(404, "sandbox_not_found"))

    async def main() -> None:
        async with AsyncPaddock(api_key="pdk_live_x", base_url=busy.url) as c:
            sbx = await AsyncSandbox.create(client=c)
            assert sbx.id == "sbx_1"
        assert len(busy.seen) == 3 and len({s["headers"]["Idempotency-Key"] for s in busy.seen}) == 1
        with pytest.raises(PaddockApiError) as err:
            await AsyncSandbox.connect("sbx_nope", api_key="pdk_live_x", base_url=missing.url)
        assert (err.value.status, err.value.code, err.value.request_id) == (404, "sandbox_not_found", "req_1")

    asyncio.run(main())


def test_a_range_answered_whole_is_cut_to_what_was_asked(fake_api):
    def answer(req, n):
        assert req.headers["Range"] in ("bytes=3-6", "bytes=7-")
        return 200, {"content-type": "application/octet-stream"}, b"0123456789"

    api = fake_api(answer)
    sbx = Sandbox({"id": "sbx_1"}, Paddock(api_key="pdk_live_x", base_url=api.url), True)  # type: ignore
    assert b"".join(sbx.files.read_stream("f", offset=3, length=4)) == b"3456"
    assert b"".join(sbx.files.read_stream("f", offset=7)) == b"789"
    sbx.close()


def test_upload_dir_of_a_path_that_is_no_directory_sends_nothing(fake_api, tmp_path):
    api = fake_api(lambda req, n: ok({}))
    sbx = Sandbox({"id": "sbx_1"}, Paddock(api_key="pdk_live_x", base_url=api.url), True)  # type: ignore
    with pytest.raises(NotADirectoryError):
        sbx.files.upload_dir(tmp_path / "missing")
    assert api.seen == []
    sbx.close()
