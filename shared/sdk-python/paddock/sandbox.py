"""``Sandbox``: the synchronous handle of one sandbox, with its ``commands``, ``files`` and ``previews``."""

import os
from typing import IO, Any, Literal, overload, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union, cast

from . import _routes as r
from . import _types as t
from ._archive import IteratorReader, extract_tar, read_chunks, tar_chunks
from ._errors import PaddockApiError
from ._models import CommandLogs, CommandResult, OutputCallback, OutputCollector, result_of
from ._previews import Previews
from ._snapshots import Snapshots
from .client import Paddock

WriteData = Union[str, bytes, bytearray, memoryview, IO[bytes], IO[str], Iterable[bytes]]


class CommandHandle:
    """A command started in the background: wait for it, read its output, write to it, or kill it."""

    def __init__(self, sandbox: "Sandbox", started: Mapping[str, Any]) -> None:
        self._sandbox = sandbox
        #: The process's id (proc_…).
        self.id: str = started["id"]
        #: The command as lists show it.
        self.command: str = started.get("command", "")
        #: When it started (RFC 3339).
        self.started_at: Optional[str] = started.get("startedAt")

    def wait(self, *, on_stdout: Optional[OutputCallback] = None, on_stderr: Optional[OutputCallback] = None) -> CommandResult:
        """Follows the process's output until it ends; answers how it ended with its kept output."""
        t_ = self._sandbox._client._t
        out = OutputCollector(t_.core.base_url, on_stdout, on_stderr, self.started_at)
        for event in t_.lines(r.process_output(self._sandbox.id, self.id, follow=True), "output stream"):
            out.take(event)
        return out.result()

    def logs(self) -> CommandLogs:
        """The output kept so far (the process goes on running)."""
        t_ = self._sandbox._client._t
        out = OutputCollector(t_.core.base_url, None, None)
        for event in t_.lines(r.process_output(self._sandbox.id, self.id, follow=False), "output stream"):
            out.take(event)
        return out.logs()

    def send_stdin(self, data: str) -> None:
        """Writes to the process's standard input (it stays open for the next write)."""
        self._sandbox._client._t.json(r.write_stdin(self._sandbox.id, self.id, data))

    def kill(self, signal: str = "KILL") -> None:
        """Signals the process's group: ``"KILL"`` (default) or ``"TERM"``; an ended process is left as it is."""
        self._sandbox._client._t.json(r.stop_process(self._sandbox.id, self.id, signal))


class Commands:
    """Runs commands in the sandbox (``sbx.commands``)."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    @overload
    def run(
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
    def run(
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
    ) -> CommandHandle: ...

    def run(
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
    ) -> Union[CommandResult, CommandHandle]:
        """Runs a command: a str through ``sh -c``, a list as argv.

        Answers a :class:`CommandResult` once it ends (a non-zero exit code is not an error), with
        ``on_stdout`` / ``on_stderr`` called with each piece of output as it is produced. With
        ``background=True`` it answers a :class:`CommandHandle` at once (no ``stdin`` or ``timeout``).
        ``timeout`` is in seconds (the API's default is 60).
        """
        sbx, t_ = self._sandbox, self._sandbox._client._t
        if background:
            if stdin is not None or timeout is not None:
                raise ValueError("a background command takes no stdin or timeout: use send_stdin() and kill()")
            started = t_.json(r.exec_command(sbx.id, r.exec_body(cmd, cwd, env, None, None, background=True), stream=False))
            return CommandHandle(sbx, started)
        body = r.exec_body(cmd, cwd, env, stdin, timeout)
        if on_stdout is None and on_stderr is None:
            return result_of(t_.json(r.exec_command(sbx.id, body, stream=False)))
        out = OutputCollector(t_.core.base_url, on_stdout, on_stderr)
        for event in t_.lines(r.exec_command(sbx.id, body, stream=True), "exec stream"):
            out.take(event)
        return out.result()

    def list(self) -> List[t.ListProcessesResponseData]:
        """The sandbox's background processes: those running and the most recent ones that ended."""
        return cast(t.ListProcessesResponse, self._sandbox._client._t.json(r.list_processes(self._sandbox.id)))["data"]

    def connect(self, process_id: str) -> CommandHandle:
        """A handle on a background process started earlier (by its proc_… id)."""
        return CommandHandle(self._sandbox, {"id": process_id})


class Files:
    """The sandbox's files (``sbx.files``); relative paths are relative to /workspace."""

    def __init__(self, sandbox: "Sandbox") -> None:
        self._sandbox = sandbox

    def read(self, path: str) -> bytes:
        """The file's bytes."""
        return b"".join(self.read_stream(path))

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """The file's content as text."""
        return self.read(path).decode(encoding)

    def read_stream(self, path: str, *, offset: int = 0, length: Optional[int] = None, chunk_size: Optional[int] = None) -> Iterator[bytes]:
        """The file's bytes (from ``offset``, ``length`` of them) in chunks as they come: nothing held whole."""
        t_ = self._sandbox._client._t
        return t_.bytes_of(r.read_raw(self._sandbox.id, path, offset, length), "file download", chunk_size)

    def write(self, path: str, data: WriteData) -> t.CreateFileResponse:
        """Writes a file (made or replaced, its parent directories made): str (UTF-8), bytes, a file opened for reading, or an iterator of bytes.

        A file or iterator is sent as it is read, never whole in memory (and so never retried).
        """
        if isinstance(data, str):
            content: Any = data.encode()
        elif isinstance(data, (bytes, bytearray, memoryview)):
            content = bytes(data)
        else:
            content = read_chunks(data) or iter(cast(Iterable[bytes], data))
        return cast(t.CreateFileResponse, self._sandbox._client._t.json(r.write_raw(self._sandbox.id, path, content)))

    def list(self, path: Optional[str] = None) -> List[t.ListDirectoryResponseEntries]:
        """The directory's entries (default /workspace)."""
        return cast(t.ListDirectoryResponse, self._sandbox._client._t.json(r.list_dir(self._sandbox.id, path)))["entries"]

    def stat(self, path: str) -> t.StatPathResponse:
        """The path's type, size, mode and modification time (a final symlink is not followed)."""
        return cast(t.StatPathResponse, self._sandbox._client._t.json(r.stat(self._sandbox.id, path)))

    def exists(self, path: str) -> bool:
        """Whether the path exists."""
        try:
            self.stat(path)
            return True
        except PaddockApiError as err:
            if err.code == "file_not_found":
                return False
            raise

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, or a directory (a non-empty one only with ``recursive=True``)."""
        self._sandbox._client._t.json(r.remove(self._sandbox.id, path, recursive))

    def move(self, source: str, destination: str, *, overwrite: bool = False) -> str:
        """Moves (renames) a file or directory; answers the new path."""
        return cast(str, self._sandbox._client._t.json(r.move(self._sandbox.id, source, destination, overwrite))["path"])

    def make_dir(self, path: str) -> str:
        """Makes a directory and its parents (an existing one is fine); answers its path."""
        return cast(str, self._sandbox._client._t.json(r.make_dir(self._sandbox.id, path))["path"])

    def upload_dir(self, local_dir: Union[str, "os.PathLike[str]"], path: Optional[str] = None) -> t.UploadArchiveResponse:
        """Sends a local directory's contents under ``path`` in the sandbox (default /workspace), as a streamed tar."""
        t_ = self._sandbox._client._t
        return cast(t.UploadArchiveResponse, t_.json(r.upload_archive(self._sandbox.id, path, tar_chunks(os.fspath(local_dir)))))

    def download_dir(self, path: Optional[str], local_dir: Union[str, "os.PathLike[str]"]) -> int:
        """Fetches a sandbox directory (default /workspace) into ``local_dir``, streamed; answers the members written.

        Members that would land outside ``local_dir`` are refused.
        """
        t_ = self._sandbox._client._t
        chunks = t_.bytes_of(r.download_archive(self._sandbox.id, path), "archive download")
        try:
            return extract_tar(cast(IO[bytes], IteratorReader(chunks)), os.fspath(local_dir))
        finally:
            cast(Any, chunks).close()


class Sandbox:
    """One sandbox: ``Sandbox.create()`` makes one, ``Sandbox.connect(id)`` finds one.

    Used as a context manager (``with Sandbox.create() as sbx:``) it is destroyed on exit.
    """

    def __init__(self, info: t.Sandbox, client: Paddock, owns_client: bool) -> None:
        self._info = info
        self._client = client
        self._owns_client = owns_client
        self._destroyed = False
        #: Runs commands: ``sbx.commands.run("ls")``.
        self.commands = Commands(self)
        #: Reads and writes files: ``sbx.files.write("a.txt", "hi")``.
        self.files = Files(self)
        #: Its ports reached from outside at URLs of their own: ``sbx.previews.create(8000)``.
        self.previews = Previews(client._t, info["id"])
        #: Copies of its workspace that outlive it: ``sbx.snapshots.create()``.
        self.snapshots = Snapshots(client._t, info["id"])

    @property
    def id(self) -> str:
        """The sandbox's id (sbx_…)."""
        return self._info["id"]

    @staticmethod
    def _client_of(client: Optional[Paddock], api_key: Optional[str], base_url: Optional[str]) -> Tuple[Paddock, bool]:
        return (client, False) if client is not None else (Paddock(api_key, base_url), True)

    @classmethod
    def create(
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
        client: Optional[Paddock] = None,
    ) -> "Sandbox":
        """Creates a sandbox and answers once it runs (with ``wait=False``, at once, pending).

        ``timeout`` is its lifetime in seconds (at most the operator's cap); ``env`` is given to
        every command. An idempotency key (one is made when not given) makes the retries safe.
        ``snapshot`` (a ready snapshot's id) starts it with that snapshot's /workspace;
        ``snapshot_on_destroy`` keeps its /workspace as a snapshot when it is destroyed (by
        ``destroy()`` or at its end), whose answer's ``finalSnapshotId`` names it.
        ``network`` says where its programs may connect: ``{"egress": "none"}``, ``{"egress": "all"}``
        or ``{"egress": {"allow": ["pypi.org:443", "203.0.113.0/24"]}}`` (the operator's
        default when not given; another needs a key with ``network:write``).
        """
        c, owned = cls._client_of(client, api_key, base_url)
        try:
            info = c._t.json(r.create_sandbox(image, env, metadata, timeout, idempotency_key, wait, snapshot, snapshot_on_destroy, network))
        except BaseException:
            if owned:
                c.close()
            raise
        return cls(cast(t.Sandbox, info), c, owned)

    @classmethod
    def connect(cls, sandbox_id: str, *, api_key: Optional[str] = None, base_url: Optional[str] = None, client: Optional[Paddock] = None) -> "Sandbox":
        """A handle on an existing sandbox of the account."""
        c, owned = cls._client_of(client, api_key, base_url)
        try:
            info = c._t.json(r.get_sandbox(sandbox_id))
        except BaseException:
            if owned:
                c.close()
            raise
        return cls(cast(t.Sandbox, info), c, owned)

    @classmethod
    def list(
        cls,
        *,
        state: str = "active",
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        client: Optional[Paddock] = None,
    ) -> List[t.Sandbox]:
        """The account's sandboxes (``state``: active, destroyed or all), newest first, every page."""
        c, owned = cls._client_of(client, api_key, base_url)
        try:
            out: List[t.Sandbox] = []
            after: Optional[str] = None
            while True:
                page = cast(t.SandboxList, c._t.json(r.sandbox_page(state, None, after)))
                out.extend(cast(List[t.Sandbox], page["data"]))
                after = page["next"]
                if not after:
                    return out
        finally:
            if owned:
                c.close()

    def info(self) -> t.Sandbox:
        """The sandbox as it is now (status, expiresAt…)."""
        self._info = cast(t.Sandbox, self._client._t.json(r.get_sandbox(self.id)))
        return self._info

    def set_network(self, policy: Mapping[str, Any]) -> t.Sandbox:
        """Where its programs may connect from now on (``{"egress": "none"}``, ``"all"``, or an allow list)."""
        self._info = cast(t.Sandbox, self._client._t.json(r.set_network(self.id, policy)))
        return self._info

    def set_timeout(self, seconds: float) -> t.Sandbox:
        """Sets the sandbox to expire ``seconds`` from now (never past the operator's cap)."""
        self._info = cast(t.Sandbox, self._client._t.json(r.set_timeout(self.id, seconds)))
        return self._info

    def destroy(self, *, wait: bool = True) -> t.Sandbox:
        """Destroys the sandbox (answers once destroyed; with ``wait=False`` at once)."""
        self._destroyed = True
        try:
            self._info = cast(t.Sandbox, self._client._t.json(r.destroy_sandbox(self.id, wait)))
            return self._info
        finally:
            self.close()

    def close(self) -> None:
        """Releases the handle's connections (the sandbox runs on); done by destroy() too."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._destroyed:
            self.destroy()

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r})"
