"""Files through the handle against a real Paddock: bytes both ways, streamed; directories as tar."""

import hashlib
import io
import os

import pytest

from conftest import live
from paddock import PaddockApiError, Sandbox

pytestmark = live


def test_write_and_read_text_bytes_files_and_iterators(sbx: Sandbox):
    sbx.files.write("notes/a.txt", "héllo\n")
    assert sbx.files.read_text("notes/a.txt") == "héllo\n"
    blob = bytes(range(256)) * 64
    sbx.files.write("/workspace/blob.bin", blob)
    assert sbx.files.read("blob.bin") == blob
    sbx.files.write("from-file.bin", io.BytesIO(blob))
    assert sbx.files.read("from-file.bin") == blob
    sbx.files.write("from-iter.txt", (f"line {i}\n".encode() for i in range(1000)))
    assert sbx.files.read_text("from-iter.txt").count("\n") == 1000
    assert sbx.commands.run("sha256sum blob.bin").stdout.split()[0] == hashlib.sha256(blob).hexdigest()


def test_read_stream_honours_a_range(sbx: Sandbox):
    sbx.files.write("range.txt", "0123456789")
    assert b"".join(sbx.files.read_stream("range.txt", offset=3, length=4)) == b"3456"
    assert b"".join(sbx.files.read_stream("range.txt", offset=7)) == b"789"


def test_list_stat_exists_move_make_dir_and_remove(sbx: Sandbox):
    assert sbx.files.make_dir("tree/deep/er").endswith("tree/deep/er")
    assert sbx.files.make_dir("tree/deep/er").endswith("tree/deep/er"), "an existing directory is fine"
    sbx.files.write("tree/one.txt", "1")
    names = {e["name"]: e["type"] for e in sbx.files.list("tree")}
    assert names == {"deep": "dir", "one.txt": "file"}
    st = sbx.files.stat("tree/one.txt")
    assert (st["type"], st["size"]) == ("file", 1)
    assert sbx.files.exists("tree/one.txt") and not sbx.files.exists("tree/none.txt")
    assert sbx.files.move("tree/one.txt", "tree/two.txt").endswith("tree/two.txt")
    assert not sbx.files.exists("tree/one.txt") and sbx.files.read_text("tree/two.txt") == "1"
    sbx.files.write("tree/three.txt", "3")
    with pytest.raises(PaddockApiError):
        sbx.files.move("tree/three.txt", "tree/two.txt")
    sbx.files.move("tree/three.txt", "tree/two.txt", overwrite=True)
    assert sbx.files.read_text("tree/two.txt") == "3"
    with pytest.raises(PaddockApiError) as err:
        sbx.files.remove("tree")
    assert err.value.status == 409
    sbx.files.remove("tree", recursive=True)
    assert not sbx.files.exists("tree")


def test_a_missing_file_and_a_path_out_of_the_sandbox_are_typed_errors(sbx: Sandbox):
    with pytest.raises(PaddockApiError) as err:
        sbx.files.read("no/such/file")
    assert (err.value.status, err.value.code) == (404, "file_not_found")
    with pytest.raises(PaddockApiError) as err:
        sbx.files.write("/etc/passwd", "x")
    assert err.value.status in (403, 400)
    sbx.commands.run("ln -sf /etc/hostname /workspace/out-link")
    assert sbx.files.stat("out-link")["type"] == "symlink"


def test_upload_dir_and_download_dir_round_trip(sbx: Sandbox, tmp_path):
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "top.txt").write_text("top")
    (src / "sub" / "deeper" / "bin.dat").write_bytes(os.urandom(300_000))
    os.symlink("top.txt", src / "link")
    sent = sbx.files.upload_dir(src, "/workspace/up")
    assert sent["files"] >= 4
    assert sbx.commands.run("cat /workspace/up/top.txt; echo; readlink /workspace/up/link").stdout == "top\ntop.txt\n"
    dest = tmp_path / "dest"
    count = sbx.files.download_dir("/workspace/up", dest)
    assert count >= 4
    assert (dest / "top.txt").read_text() == "top"
    assert (dest / "sub" / "deeper" / "bin.dat").read_bytes() == (src / "sub" / "deeper" / "bin.dat").read_bytes()
    assert os.readlink(dest / "link") == "top.txt"


def test_download_dir_refuses_a_link_that_points_out_of_the_destination(sbx: Sandbox, tmp_path):
    sbx.commands.run("mkdir -p /workspace/evil && ln -sf /etc /workspace/evil/escape && ln -sf ../../.. /workspace/evil/up")
    with pytest.raises(ValueError, match="points out"):
        sbx.files.download_dir("/workspace/evil", tmp_path / "evil")
    assert not os.path.lexists(tmp_path / "evil" / "escape") or os.path.realpath(tmp_path / "evil" / "escape").startswith(str(tmp_path))
