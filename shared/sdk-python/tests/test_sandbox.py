"""The sandbox handle and its commands against a real Paddock."""

import calendar
import os
import time

import pytest

from conftest import live
from paddock import CommandHandle, CommandResult, Paddock, PaddockApiError, Sandbox

pytestmark = live


def test_create_info_connect_list_and_destroy_on_leaving_the_block(client: Paddock):
    with Sandbox.create(metadata={"purpose": "lifecycle"}, env={"GREETING": "hi"}, timeout=300) as sbx:
        assert sbx.id.startswith("sbx_")
        info = sbx.info()
        assert (info["status"], info["metadata"]) == ("running", {"purpose": "lifecycle"})
        assert sbx.commands.run("echo $GREETING").stdout == "hi\n"
        same = Sandbox.connect(sbx.id)
        assert same.info()["id"] == sbx.id
        same.close()
        assert sbx.id in [s["id"] for s in Sandbox.list()]
        kept = sbx.id
    gone = Sandbox.connect(kept, client=client).info()
    assert gone["state"] == "destroyed" and gone["destroyReason"] == "user"
    assert kept not in [s["id"] for s in Sandbox.list(client=client)]
    assert kept in [s["id"] for s in Sandbox.list(client=client, state="destroyed")]


def test_set_timeout_moves_expires_at(sbx: Sandbox):
    info = sbx.set_timeout(120)
    expires = calendar.timegm(time.strptime(info["expiresAt"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert abs(expires - (time.time() + 120)) < 30, info["expiresAt"]


def test_a_str_runs_through_sh_and_a_list_is_argv(sbx: Sandbox):
    r = sbx.commands.run("echo one; echo two >&2; exit 3")
    assert isinstance(r, CommandResult)
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out) == (3, "one\n", "two\n", False)
    assert r.duration_ms >= 0
    argv = sbx.commands.run(["printf", "%s|", "a b", "$HOME", ";"])
    assert argv.stdout == "a b|$HOME|;|"


def test_cwd_env_and_stdin(sbx: Sandbox):
    r = sbx.commands.run("pwd; echo $X; cat", cwd="/tmp", env={"X": "from env"}, stdin="from stdin")
    assert r.stdout == "/tmp\nfrom env\nfrom stdin"


def test_a_timeout_kills_the_command_and_says_so(sbx: Sandbox):
    started = time.monotonic()
    r = sbx.commands.run("sleep 30", timeout=1)
    assert r.timed_out and r.exit_code is None
    assert time.monotonic() - started < 15


def test_callbacks_get_output_as_it_is_produced(sbx: Sandbox):
    seen = []
    started = time.monotonic()
    r = sbx.commands.run(
        "echo first; sleep 2; echo second >&2; echo third",
        on_stdout=lambda d: seen.append(("out", d, time.monotonic() - started)),
        on_stderr=lambda d: seen.append(("err", d, time.monotonic() - started)),
    )
    ended = time.monotonic() - started
    assert r.exit_code == 0 and r.stdout == "first\nthird\n" and r.stderr == "second\n"
    assert seen[0][:2] == ("out", "first\n")
    assert seen[0][2] < ended - 1.5, f"the first line came {seen[0][2]:.2f}s in, the command ended at {ended:.2f}s"
    assert "".join(d for k, d, _ in seen if k == "err") == "second\n"


def test_a_background_command_takes_stdin_shows_logs_and_is_killed(sbx: Sandbox):
    proc = sbx.commands.run("while read line; do echo got $line; done", background=True)
    assert isinstance(proc, CommandHandle) and proc.id.startswith("proc_")
    proc.send_stdin("one\n")
    deadline = time.monotonic() + 10
    while "got one" not in proc.logs().stdout:
        assert time.monotonic() < deadline, "the process never answered its stdin"
        time.sleep(0.1)
    assert proc.id in [p["id"] for p in sbx.commands.list()]
    proc.kill()
    ended = proc.wait()
    assert ended.exit_code != 0
    assert "got one" in ended.stdout


def test_a_background_command_waited_for_streams_its_output_and_exit_code(sbx: Sandbox):
    proc = sbx.commands.run(["sh", "-c", "echo a; sleep 1; echo b >&2; exit 4"], background=True)
    out = []
    r = sbx.commands.connect(proc.id).wait(on_stdout=out.append, on_stderr=out.append)
    assert (r.exit_code, r.stdout, r.stderr) == (4, "a\n", "b\n")
    assert sorted(out) == ["a\n", "b\n"]
    with pytest.raises(ValueError):
        sbx.commands.run("cat", background=True, stdin="x")


def test_another_accounts_sandbox_is_not_found(client: Paddock):
    other_key = os.environ.get("PADDOCK_OTHER_API_KEY")
    if not other_key:
        pytest.skip("needs PADDOCK_OTHER_API_KEY")
    with Sandbox.create(client=client) as mine:
        with pytest.raises(PaddockApiError) as err:
            Sandbox.connect(mine.id, api_key=other_key)
        assert (err.value.status, err.value.code) == (404, "sandbox_not_found")
        assert err.value.request_id
        theirs = Sandbox({"id": mine.id}, Paddock(api_key=other_key), True)  # type: ignore
        with pytest.raises(PaddockApiError) as err:
            theirs.commands.run("true")
        assert err.value.code == "sandbox_not_found"
        with pytest.raises(PaddockApiError):
            theirs.destroy()
        assert mine.commands.run("echo still here").stdout == "still here\n"


def test_an_unknown_sandbox_is_a_typed_error():
    with pytest.raises(PaddockApiError) as err:
        Sandbox.connect("sbx_doesnotexist")
    assert (err.value.status, err.value.code) == (404, "sandbox_not_found")
