"""Directories to and from the archive routes as tar, streamed both ways (never whole in memory)."""

import io
import os
import stat
import tarfile
from typing import IO, Any, Callable, Iterator, Optional

_BLOCK = 512
_CHUNK = 256 * 1024


def tar_chunks(local_dir: str) -> Iterator[bytes]:
    """A tar of the directory's contents (members relative to it), produced as it is read.

    A path that is no directory is refused here, before any request is sent.
    """
    root = os.path.abspath(local_dir)
    if not os.path.isdir(root):
        raise NotADirectoryError(f"{local_dir} is not a directory")
    return _tar_of(root)


def _tar_of(root: str) -> Iterator[bytes]:
    builder = tarfile.TarFile(fileobj=io.BytesIO(), mode="w", format=tarfile.PAX_FORMAT)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            full = os.path.join(dirpath, name)
            arcname = os.path.relpath(full, root)
            info = builder.gettarinfo(full, arcname)
            if info is None:  # a socket or the like: tar has no member for it
                continue
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if not info.isreg():
                info.size = 0
            yield info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
            if info.isreg():
                yield from _file_chunks(full, info.size)
    # Two zero blocks end the archive.
    yield b"\0" * (2 * _BLOCK)


def _file_chunks(path: str, size: int) -> Iterator[bytes]:
    """The file's first `size` bytes (the header promised them), zero-filled if it shrank, padded to a block."""
    left = size
    with open(path, "rb") as f:
        while left > 0:
            chunk = f.read(min(_CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    if left:
        yield b"\0" * left
    pad = (-size) % _BLOCK
    if pad:
        yield b"\0" * pad


class IteratorReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (for tarfile's stream mode)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def extract_tar(stream: IO[bytes], local_dir: str) -> int:
    """Extracts a tar read as a stream under local_dir; answers the members written.

    A member that would land outside local_dir (an absolute name, ``..``, a link pointing out, a
    path through a link) is refused, as are devices; ownership is the caller's, modes lose setuid.
    """
    os.makedirs(local_dir, exist_ok=True)
    root = os.path.realpath(local_dir)
    count = 0
    extra = {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            name = member.name
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if name.startswith("/") or ".." in parts:
                raise ValueError(f"refusing archive member {name!r}: it climbs out of {local_dir}")
            if not parts:
                continue
            target = os.path.realpath(os.path.join(root, *parts[:-1]))
            if not _inside(root, target):
                raise ValueError(f"refusing archive member {name!r}: it passes through a link out of {local_dir}")
            if member.issym() or member.islnk():
                base = target if member.issym() else root
                dest = os.path.realpath(os.path.join(base, member.linkname))
                if os.path.isabs(member.linkname) or not _inside(root, dest):
                    raise ValueError(f"refusing archive member {name!r}: its link points out of {local_dir}")
            elif not (member.isreg() or member.isdir()):
                continue  # devices and fifos are never made
            member.name = "/".join(parts)
            member.mode = stat.S_IMODE(member.mode) & 0o777
            if member.isdir():
                member.mode |= 0o700  # its members are written into it after
            member.uid, member.gid = os.getuid(), os.getgid()
            member.uname = member.gname = ""
            tar.extract(member, root, set_attrs=not member.issym(), **extra)  # type: ignore[arg-type]
            count += 1
    return count


def read_chunks(source: object, chunk_size: int = _CHUNK) -> Optional[Iterator[bytes]]:
    """The chunks of a file-like object's read(), or None when it has none."""
    read: Optional[Callable[[int], Any]] = getattr(source, "read", None)
    if read is None:
        return None
    reader = read

    def chunks() -> Iterator[bytes]:
        while True:
            chunk = reader(chunk_size)
            if not chunk:
                return
            yield chunk.encode() if isinstance(chunk, str) else chunk

    return chunks()
