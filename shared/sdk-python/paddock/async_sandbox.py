"""``AsyncSandbox``: the asynchronous handle of one sandbox; the same surface as ``Sandbox``, awaited."""

import asyncio
import os
import tempfile
from typing import IO, Any, Literal, overload, AsyncIterable, AsyncIterator, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, cast

from . import _routes as r
from . import _types as t
from ._archive import extract_tar, read_chunks, tar_chunks
from ._errors import PaddockApiError
from ._models import CommandLogs, CommandResult, OutputCallback, OutputCollector, result_of
from ._previews import AsyncPreviews
from ._snapshots import AsyncSnapshots
from .async_client import AsyncPaddock

AsyncWriteData = Union[str, bytes, bytearray, memoryview, IO[bytes], IO[str], Iterable[bytes], AsyncIterable[bytes]]


class AsyncCommandHandle:
    """A command started in the background: wait for it, read its output, write to it, or kill it."""

    def __init__(self, sandbox: "AsyncSandbox", started: Mapping[str, Any]) -> None:
        self._sandbox = sandbox
        #: The process's id (proc_…).
        self.id: str = started["id"]
        #: The command as lists show it.
        self.command: str = started.get("command", "")
        #: When it started (RFC 3339).
        self.started_at: Optional[str] = started.get("startedAt")

    async def wait(self, *, on_stdout: Optional[OutputCallback] = None, on_stderr: Optional[OutputCallback] = None) -> CommandResult:
        """Follows the process's output until it ends; answers how it ended with its kept output."""
        t_ = self._sandbox._client._t
        out = OutputCollector(t_.core.base_url, on_stdout, on_stderr, self.started_at)
        async for event in t_.lines(r.process_output(self._sandbox.id, self.id, follow=True), "output stream"):
            out.take(event)
        return out.result()

    async def logs(self) -> CommandLogs:
        """The output kept so far (the process goes on running)."""
        t_ = self._sandbox._client._t
        out = OutputCollector(t_.core.base_url, None, None)
        async for event in t_.lines(r.process_output(self._sandbox.id, self.id, follow=False), "output stream"):
            out.take(event)
        return out.logs()

    async def send_stdin(self, data: str) -> None:
        """Writes to the process's standard input (it stays open for the next write)."""
        await self._sandbox._client._t.json(r.write_stdin(self._sandbox.id, self.id, data))

    async def kill(self, signal: str = "KILL") -> None:
        """Signals the process's group: ``"KILL"`` (default) or ``"TERM"``; an ended process is left as it is."""
        await self._sandbox._client._t.json(r.stop_process(self._sandbox.id, self.id, signal))


class AsyncCommands:
    """Runs commands in the sandbox (``sbx.commands``)."""

    def __init__(self, sandbox: "AsyncSandbox") -> None:
        self._sandbox = sandbox

    @overload
    async def run(
        self,
        cmd: Union[str, Sequence[str]],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        background: Literal[False] = False,
    ) -> CommandResult: ...

    @overload
    async def run(
        self,
        cmd: Union[str, Sequence[str]],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        background: Literal[True],
    ) -> AsyncCommandHandle: ...

    async def run(
        self,
        cmd: Union[str, Sequence[str]],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        stdin: Optional[str] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        background: bool = False,
    ) -> Union[CommandResult, AsyncCommandHandle]:
        """Runs a command: a str through ``sh -c``, a list as argv.

        Answers a :class:`CommandResult` once it ends (a non-zero exit code is not an error), with
        ``on_stdout`` / ``on_stderr`` called with each piece of output as it is produced. With
        ``background=True`` it answers an :class:`AsyncCommandHandle` at once (no ``stdin`` or
        ``timeout``). ``timeout`` is in seconds (the API's default is 60).
        """
        sbx, t_ = self._sandbox, self._sandbox._client._t
        if background:
            if stdin is not None or timeout is not None:
                raise ValueError("a background command takes no stdin or timeout: use send_stdin() and kill()")
            started = await t_.json(r.exec_command(sbx.id, r.exec_body(cmd, cwd, env, None, None, background=True), stream=False))
            return AsyncCommandHandle(sbx, started)
        body = r.exec_body(cmd, cwd, env, stdin, timeout)
        if on_stdout is None and on_stderr is None:
            return result_of(await t_.json(r.exec_command(sbx.id, body, stream=False)))
        out = OutputCollector(t_.core.base_url, on_stdout, on_stderr)
        async for event in t_.lines(r.exec_command(sbx.id, body, stream=True), "exec stream"):
            out.take(event)
        return out.result()

    async def list(self) -> List[t.ListProcessesResponseData]:
        """The sandbox's background processes: those running and the most recent ones that ended."""
        return cast(t.ListProcessesResponse, await self._sandbox._client._t.json(r.list_processes(self._sandbox.id)))["data"]

    def connect(self, process_id: str) -> AsyncCommandHandle:
        """A handle on a background process started earlier (by its proc_… id)."""
        return AsyncCommandHandle(self._sandbox, {"id": process_id})


async def _async_chunks(data: Any) -> AsyncIterator[bytes]:
    """An async iterator, a file or a sync iterator of bytes, as an async iterator."""
    if hasattr(data, "__aiter__"):
        async for chunk in data:
            yield chunk
        return
    for chunk in read_chunks(data) or iter(data):
        yield chunk


class AsyncFiles:
    """The sandbox's files (``sbx.files``); relative paths are relative to /workspace."""

    def __init__(self, sandbox: "AsyncSandbox") -> None:
        self._sandbox = sandbox

    async def read(self, path: str) -> bytes:
        """The file's bytes."""
        return b"".join([chunk async for chunk in self.read_stream(path)])

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The file's content as text."""
        return (await self.read(path)).decode(encoding)

    def read_stream(self, path: str, *, offset: int = 0, length: Optional[int] = None, chunk_size: Optional[int] = None) -> AsyncIterator[bytes]:
        """The file's bytes (from ``offset``, ``length`` of them) in chunks as they come: nothing held whole."""
        t_ = self._sandbox._client._t
        return t_.bytes_of(r.read_raw(self._sandbox.id, path, offset, length), "file download", chunk_size)

    async def write(self, path: str, data: AsyncWriteData) -> t.CreateFileResponse:
        """Writes a file (made or replaced, its parent directories made): str (UTF-8), bytes, a file opened for reading, or a (async) iterator of bytes.

        A file or iterator is sent as it is read, never whole in memory (and so never retried).
        """
        if isinstance(data, str):
            content: Any = data.encode()
        elif isinstance(data, (bytes, bytearray, memoryview)):
            content = bytes(data)
        else:
            content = _async_chunks(data)
        return cast(t.CreateFileResponse, await self._sandbox._client._t.json(r.write_raw(self._sandbox.id, path, content)))

    async def list(self, path: Optional[str] = None) -> List[t.ListDirectoryResponseEntries]:
        """The directory's entries (default /workspace)."""
        return cast(t.ListDirectoryResponse, await self._sandbox._client._t.json(r.list_dir(self._sandbox.id, path)))["entries"]

    async def stat(self, path: str) -> t.StatPathResponse:
        """The path's type, size, mode and modification time (a final symlink is not followed)."""
        return cast(t.StatPathResponse, await self._sandbox._client._t.json(r.stat(self._sandbox.id, path)))

    async def exists(self, path: str) -> bool:
        """Whether the path exists."""
        try:
            await self.stat(path)
            return True
        except PaddockApiError as err:
            if err.code == "file_not_found":
                return False
            raise

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, or a directory (a non-empty one only with ``recursive=True``)."""
        await self._sandbox._client._t.json(r.remove(self._sandbox.id, path, recursive))

    async def move(self, source: str, destination: str, *, overwrite: bool = False) -> str:
        """Moves (renames) a file or directory; answers the new path."""
        return cast(str, (await self._sandbox._client._t.json(r.move(self._sandbox.id, source, destination, overwrite)))["path"])

    async def make_dir(self, path: str) -> str:
        """Makes a directory and its parents (an existing one is fine); answers its path."""
        return cast(str, (await self._sandbox._client._t.json(r.make_dir(self._sandbox.id, path)))["path"])

    async def upload_dir(self, local_dir: Union[str, "os.PathLike[str]"], path: Optional[str] = None) -> t.UploadArchiveResponse:
        """Sends a local directory's contents under ``path`` in the sandbox (default /workspace), as a streamed tar."""
        t_ = self._sandbox._client._t
        req = r.upload_archive(self._sandbox.id, path, _async_chunks(tar_chunks(os.fspath(local_dir))))
        return cast(t.UploadArchiveResponse, await t_.json(req))

    async def download_dir(self, path: Optional[str], local_dir: Union[str, "os.PathLike[str]"]) -> int:
        """Fetches a sandbox directory (default /workspace) into ``local_dir``; answers the members written.

        The archive is spooled to a temporary file (not memory), then extracted; members that
        would land outside ``local_dir`` are refused.
        """
        t_ = self._sandbox._client._t
        with tempfile.TemporaryFile() as spool:
            async for chunk in t_.bytes_of(r.download_archive(self._sandbox.id, path), "archive download"):
                spool.write(chunk)
            spool.seek(0)
            return await asyncio.get_running_loop().run_in_executor(None, extract_tar, spool, os.fspath(local_dir))


class AsyncSandbox:
    """One sandbox, asynchronously: ``await AsyncSandbox.create()`` makes one, ``connect(id)`` finds one.

    Used as an async context manager (``async with await AsyncSandbox.create() as sbx:``) it is
    destroyed on exit.
    """

    def __init__(self, info: t.Sandbox, client: AsyncPaddock, owns_client: bool) -> None:
        self._info = info
        self._client = client
        self._owns_client = owns_client
        self._destroyed = False
        #: Runs commands: ``await sbx.commands.run("ls")``.
        self.commands = AsyncCommands(self)
        #: Reads and writes files: ``await sbx.files.write("a.txt", "hi")``.
        self.files = AsyncFiles(self)
        #: Its ports reached from outside at URLs of their own: ``await sbx.previews.create(8000)``.
        self.previews = AsyncPreviews(client._t, info["id"])
        #: Copies of its workspace that outlive it: ``await sbx.snapshots.create()``.
        self.snapshots = AsyncSnapshots(client._t, info["id"])

    @property
    def id(self) -> str:
        """The sandbox's id (sbx_…)."""
        return self._info["id"]

    @staticmethod
    def _client_of(client: Optional[AsyncPaddock], api_key: Optional[str], base_url: Optional[str]) -> Tuple[AsyncPaddock, bool]:
        return (client, False) if client is not None else (AsyncPaddock(api_key, base_url), True)

    @classmethod
    async def create(
        cls,
        image: Optional[str] = None,
        *,
        env: Optional[Mapping[str, str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
        wait: bool = True,
        idempotency_key: Optional[str] = None,
        snapshot: Optional[str] = None,
        snapshot_on_destroy: bool = False,
        network: Optional[Mapping[str, Any]] = None,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        client: Optional[AsyncPaddock] = None,
    ) -> "AsyncSandbox":
        """Creates a sandbox and answers once it runs (with ``wait=False``, at once, pending).

        ``timeout`` is its lifetime in seconds (at most the operator's cap); ``env`` is given to
        every command. An idempotency key (one is made when not given) makes the retries safe.
        ``snapshot`` (a ready snapshot's id) starts it with that snapshot's /workspace;
        ``snapshot_on_destroy`` keeps its /workspace as a snapshot when it is destroyed (by
        ``destroy()`` or at its end), whose answer's ``finalSnapshotId`` names it.
        ``network`` says where its programs may connect: ``{"egress": "none"}``, ``{"egress": "all"}``
        or ``{"egress": {"allow": ["203.0.113.0/24", "198.51.100.7:443"]}}`` (the operator's
        default when not given; another needs a key with ``network:write``).
        """
        c, owned = cls._client_of(client, api_key, base_url)
        try:
            info = await c._t.json(r.create_sandbox(image, env, metadata, timeout, idempotency_key, wait, snapshot, snapshot_on_destroy, network))
        except BaseException:
            if owned:
                await c.close()
            raise
        return cls(cast(t.Sandbox, info), c, owned)

    @classmethod
    async def connect(
        cls, sandbox_id: str, *, api_key: Optional[str] = None, base_url: Optional[str] = None, client: Optional[AsyncPaddock] = None
    ) -> "AsyncSandbox":
        """A handle on an existing sandbox of the account."""
        c, owned = cls._client_of(client, api_key, base_url)
        try:
            info = await c._t.json(r.get_sandbox(sandbox_id))
        except BaseException:
            if owned:
                await c.close()
            raise
        return cls(cast(t.Sandbox, info), c, owned)

    @classmethod
    async def list(
        cls,
        *,
        state: str = "active",
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        client: Optional[AsyncPaddock] = None,
    ) -> List[t.Sandbox]:
        """The account's sandboxes (``state``: active, destroyed or all), newest first, every page."""
        c, owned = cls._client_of(client, api_key, base_url)
        try:
            out: List[t.Sandbox] = []
            after: Optional[str] = None
            while True:
                page = cast(t.SandboxList, await c._t.json(r.sandbox_page(state, None, after)))
                out.extend(cast(List[t.Sandbox], page["data"]))
                after = page["next"]
                if not after:
                    return out
        finally:
            if owned:
                await c.close()

    async def info(self) -> t.Sandbox:
        """The sandbox as it is now (status, expiresAt…)."""
        self._info = cast(t.Sandbox, await self._client._t.json(r.get_sandbox(self.id)))
        return self._info

    async def set_network(self, policy: Mapping[str, Any]) -> t.Sandbox:
        """Where its programs may connect from now on (``{"egress": "none"}``, ``"all"``, or an allow list)."""
        self._info = cast(t.Sandbox, await self._client._t.json(r.set_network(self.id, policy)))
        return self._info

    async def set_timeout(self, seconds: float) -> t.Sandbox:
        """Sets the sandbox to expire ``seconds`` from now (never past the operator's cap)."""
        self._info = cast(t.Sandbox, await self._client._t.json(r.set_timeout(self.id, seconds)))
        return self._info

    async def destroy(self, *, wait: bool = True) -> t.Sandbox:
        """Destroys the sandbox (answers once destroyed; with ``wait=False`` at once)."""
        self._destroyed = True
        try:
            self._info = cast(t.Sandbox, await self._client._t.json(r.destroy_sandbox(self.id, wait)))
            return self._info
        finally:
            await self.close()

    async def close(self) -> None:
        """Releases the handle's connections (the sandbox runs on); done by destroy() too."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if not self._destroyed:
            await self.destroy()

    def __repr__(self) -> str:
        return f"AsyncSandbox(id={self.id!r})"
