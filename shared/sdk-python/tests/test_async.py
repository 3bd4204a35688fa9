"""AsyncSandbox and AsyncPaddock: the same surface as the sync ones, awaited."""

import asyncio
import io

from conftest import live
from paddock import AsyncCommandHandle, AsyncPaddock, AsyncSandbox, CommandResult

pytestmark = live


def test_the_async_handle_runs_commands_moves_directories_and_is_destroyed_on_exit(tmp_path):
    async def main() -> None:
        async with AsyncPaddock() as client:
            assert (await client.account())["id"]
            async with await AsyncSandbox.create(client=client, metadata={"via": "async"}) as sbx:
                assert (await sbx.info())["metadata"] == {"via": "async"}
                assert (await AsyncSandbox.connect(sbx.id, client=client)).id == sbx.id
                seen = []
                r = await sbx.commands.run("echo a; echo b >&2; exit 2", on_stdout=seen.append, on_stderr=seen.append)
                assert isinstance(r, CommandResult) and (r.exit_code, r.stdout, r.stderr) == (2, "a\n", "b\n")
                assert sorted(seen) == ["a\n", "b\n"]
                plain = await sbx.commands.run(["echo", "plain"], cwd="/tmp", env={"X": "1"})
                assert plain.stdout == "plain\n"
                proc = await sbx.commands.run("read x; echo got $x", background=True)
                assert isinstance(proc, AsyncCommandHandle)
                await proc.send_stdin("it\n")
                assert (await proc.wait()).stdout == "got it\n"
                assert proc.id in [p["id"] for p in await sbx.commands.list()]
                (tmp_path / "d").mkdir()
                (tmp_path / "d" / "x.txt").write_text("x")
                await sbx.files.upload_dir(tmp_path / "d", "/workspace/d")
                assert "x.txt" in [e["name"] for e in await sbx.files.list("/workspace/d")]
                assert await sbx.files.download_dir("/workspace/d", tmp_path / "back") >= 1
                assert (tmp_path / "back" / "x.txt").read_text() == "x"
                kept = sbx.id
            assert kept not in [s["id"] for s in await AsyncSandbox.list(client=client)]

    asyncio.run(main())


def test_the_async_handle_writes_and_reads_files():
    async def main() -> None:
        async with await AsyncSandbox.create() as sbx:
            await sbx.files.write("a.bin", b"\x00\x01" * 1000)
            assert await sbx.files.read("a.bin") == b"\x00\x01" * 1000
            await sbx.files.write("b.txt", io.BytesIO(b"from a file"))
            assert await sbx.files.read_text("b.txt") == "from a file"

            async def chunks():
                for i in range(3):
                    yield f"{i}".encode()

            await sbx.files.write("c.txt", chunks())
            assert await sbx.files.read_text("c.txt") == "012"
            assert b"".join([c async for c in sbx.files.read_stream("c.txt", offset=1)]) == b"12"
            assert await sbx.files.exists("c.txt") and not await sbx.files.exists("nope")
            await sbx.files.make_dir("m/n")
            assert await sbx.files.move("c.txt", "m/n/c.txt")
            assert (await sbx.files.stat("m/n/c.txt"))["size"] == 3
            await sbx.files.remove("m", recursive=True)
            assert not await sbx.files.exists("m")

    asyncio.run(main())
