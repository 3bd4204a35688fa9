"""One function per route the SDK calls: each answers the Request to send (shared by sync and async)."""

import math
import uuid
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union
from urllib.parse import quote

from ._http import NDJSON, Request


def seg(value: str) -> str:
    """A path segment, escaped (an id never climbs into another route)."""
    return quote(value, safe="")


def _sbx(sandbox_id: str, sub: str = "") -> str:
    return f"/v1/sandboxes/{seg(sandbox_id)}{sub}"


def _seconds(value: Union[int, float]) -> Union[int, float]:
    if value <= 0:
        raise ValueError("a timeout is a positive number of seconds")
    return int(value) if float(value).is_integer() else value


# ---- sandboxes ----


def create_sandbox(
    image: Optional[str],
    env: Optional[Mapping[str, str]],
    metadata: Optional[Mapping[str, str]],
    timeout: Optional[float],
    idempotency_key: Optional[str],
    wait: bool,
    snapshot: Optional[str] = None,
    snapshot_on_destroy: bool = False,
    network: Optional[Mapping[str, Any]] = None,
) -> Request:
    body: Dict[str, Any] = {}
    if network is not None:
        body["network"] = dict(network)
    if snapshot is not None:
        body["snapshot"] = snapshot
    if snapshot_on_destroy:
        body["snapshotOnDestroy"] = True
    if image is not None:
        body["image"] = image
    if env is not None:
        body["env"] = dict(env)
    if metadata is not None:
        body["metadata"] = dict(metadata)
    if timeout is not None:
        body["timeoutSeconds"] = math.ceil(timeout)
    # A key of its own on every create, so that a retry after a 429 or 503 never makes a second sandbox.
    key = idempotency_key or f"py-{uuid.uuid4()}"
    return Request("POST", "/v1/sandboxes", query={"wait": wait}, body=body, headers={"Idempotency-Key": key})


def sandbox_page(state: str, limit: Optional[int], after: Optional[str]) -> Request:
    return Request("GET", "/v1/sandboxes", query={"state": state, "limit": limit, "after": after})


def get_sandbox(sandbox_id: str) -> Request:
    return Request("GET", _sbx(sandbox_id))


def destroy_sandbox(sandbox_id: str, wait: bool) -> Request:
    return Request("DELETE", _sbx(sandbox_id), query={"wait": wait})


def set_network(sandbox_id: str, policy: Mapping[str, Any]) -> Request:
    return Request("PATCH", _sbx(sandbox_id, "/network"), body=dict(policy))


def set_timeout(sandbox_id: str, seconds: float) -> Request:
    return Request("POST", _sbx(sandbox_id, "/timeout"), body={"timeoutSeconds": math.ceil(_seconds(seconds))})


# ---- commands ----


def exec_body(
    cmd: Union[str, Sequence[str]],
    cwd: Optional[str],
    env: Optional[Mapping[str, str]],
    stdin: Optional[str],
    timeout: Optional[float],
    background: bool = False,
) -> Dict[str, Any]:
    body: Dict[str, Any] = {"command": cmd if isinstance(cmd, str) else list(cmd)}
    if cwd is not None:
        body["cwd"] = cwd
    if env is not None:
        body["env"] = dict(env)
    if stdin is not None:
        body["stdin"] = stdin
    if timeout is not None:
        body["timeoutSeconds"] = _seconds(timeout)
    if background:
        body["background"] = True
    return body


def exec_command(sandbox_id: str, body: Dict[str, Any], stream: bool) -> Request:
    return Request("POST", _sbx(sandbox_id, "/exec"), body=body, accept=NDJSON if stream else "application/json", long_read=True)


def list_processes(sandbox_id: str) -> Request:
    return Request("GET", _sbx(sandbox_id, "/processes"))


def process_output(sandbox_id: str, proc_id: str, follow: bool) -> Request:
    path = _sbx(sandbox_id, f"/processes/{seg(proc_id)}/output")
    return Request("GET", path, query={"follow": "true" if follow else None}, accept=NDJSON, long_read=follow)


def write_stdin(sandbox_id: str, proc_id: str, data: str) -> Request:
    return Request("POST", _sbx(sandbox_id, f"/processes/{seg(proc_id)}/stdin"), body={"data": data})


def stop_process(sandbox_id: str, proc_id: str, signal: str) -> Request:
    if signal not in ("TERM", "KILL"):
        raise ValueError('signal is "TERM" or "KILL"')
    return Request("DELETE", _sbx(sandbox_id, f"/processes/{seg(proc_id)}"), query={"signal": signal})


# ---- files ----


def read_raw(sandbox_id: str, path: str, offset: int = 0, length: Optional[int] = None) -> Request:
    headers: Dict[str, str] = {}
    if offset or length is not None:
        end = "" if length is None else str(offset + length - 1)
        headers["Range"] = f"bytes={offset}-{end}"
    return Request("GET", _sbx(sandbox_id, "/files/raw"), query={"path": path}, headers=headers, accept="application/octet-stream")


def write_raw(sandbox_id: str, path: str, content: Any) -> Request:
    return Request("PUT", _sbx(sandbox_id, "/files/raw"), query={"path": path}, content=content, content_type="application/octet-stream")


def list_dir(sandbox_id: str, path: Optional[str]) -> Request:
    return Request("GET", _sbx(sandbox_id, "/files/ls"), query={"path": path})


def stat(sandbox_id: str, path: str) -> Request:
    return Request("GET", _sbx(sandbox_id, "/files/stat"), query={"path": path})


def remove(sandbox_id: str, path: str, recursive: bool) -> Request:
    return Request("DELETE", _sbx(sandbox_id, "/files"), query={"path": path, "recursive": "true" if recursive else None})


def move(sandbox_id: str, source: str, destination: str, overwrite: bool) -> Request:
    return Request("POST", _sbx(sandbox_id, "/files/move"), body={"from": source, "to": destination, "overwrite": overwrite})


def make_dir(sandbox_id: str, path: str) -> Request:
    return Request("POST", _sbx(sandbox_id, "/files/mkdir"), query={"path": path})


def download_archive(sandbox_id: str, path: Optional[str]) -> Request:
    return Request("GET", _sbx(sandbox_id, "/files/archive"), query={"path": path}, accept="application/x-tar")


def upload_archive(sandbox_id: str, path: Optional[str], content: Any) -> Request:
    return Request("PUT", _sbx(sandbox_id, "/files/archive"), query={"path": path}, content=content, content_type="application/x-tar")


# ---- previews ----


def _port(port: int) -> int:
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError("a port is an int")
    return port


def create_preview(sandbox_id: str, port: int, public: Optional[bool], expires_in_seconds: Optional[float]) -> Request:
    body: Dict[str, Any] = {"port": _port(port)}
    if public is not None:
        body["public"] = bool(public)
    if expires_in_seconds is not None:
        body["expiresInSeconds"] = math.ceil(expires_in_seconds)
    return Request("POST", _sbx(sandbox_id, "/previews"), body=body)


def list_previews(sandbox_id: str) -> Request:
    return Request("GET", _sbx(sandbox_id, "/previews"))


def delete_preview(sandbox_id: str, port: int) -> Request:
    return Request("DELETE", _sbx(sandbox_id, f"/previews/{_port(port)}"))


# ---- snapshots ----


def create_snapshot(sandbox_id: str, name: Optional[str], wait: bool) -> Request:
    body: Dict[str, Any] = {} if name is None else {"name": name}
    return Request("POST", _sbx(sandbox_id, "/snapshots"), query={"wait": wait}, body=body)


def snapshot_page(limit: Optional[int], after: Optional[str]) -> Request:
    return Request("GET", "/v1/snapshots", query={"limit": limit, "after": after})


def get_snapshot(snapshot_id: str) -> Request:
    return Request("GET", f"/v1/snapshots/{seg(snapshot_id)}")


def delete_snapshot(snapshot_id: str) -> Request:
    return Request("DELETE", f"/v1/snapshots/{seg(snapshot_id)}")


# ---- account-wide routes ----


def account() -> Request:
    return Request("GET", "/v1/account")


def get_allowlist() -> Request:
    return Request("GET", "/v1/allowlist")


def set_allowlist(commands: List[str]) -> Request:
    return Request("PUT", "/v1/allowlist", body={"commands": list(commands)})


def clear_allowlist() -> Request:
    return Request("DELETE", "/v1/allowlist")


def create_secret(name: str, value: str, sandbox_id: Optional[str], inject: Optional[Mapping[str, Any]] = None) -> Request:
    body: Dict[str, Any] = {"name": name, "value": value}
    if sandbox_id is not None:
        body["sandboxId"] = sandbox_id
    if inject is not None:
        body["inject"] = dict(inject)
    return Request("POST", "/v1/secrets", body=body)


def list_secrets(sandbox_id: Optional[str]) -> Request:
    return Request("GET", "/v1/secrets", query={"sandboxId": sandbox_id})


def delete_secret(name: str, sandbox_id: Optional[str]) -> Request:
    return Request("DELETE", f"/v1/secrets/{seg(name)}", query={"sandboxId": sandbox_id})


def list_events(after: Optional[str], limit: Optional[int]) -> Request:
    return Request("GET", "/v1/events", query={"after": after, "limit": limit})


def stream_events(after: Optional[str]) -> Request:
    headers = {"Last-Event-ID": after} if after else {}
    return Request("GET", "/v1/events", headers=headers, accept="text/event-stream", long_read=True)


def create_webhook(url: str, events: Optional[List[str]], description: Optional[str]) -> Request:
    body: Dict[str, Any] = {"url": url}
    if events is not None:
        body["events"] = list(events)
    if description is not None:
        body["description"] = description
    return Request("POST", "/v1/webhooks", body=body)


def list_webhooks() -> Request:
    return Request("GET", "/v1/webhooks")


def delete_webhook(webhook_id: str) -> Request:
    return Request("DELETE", f"/v1/webhooks/{seg(webhook_id)}")


def test_webhook(webhook_id: str) -> Request:
    return Request("POST", f"/v1/webhooks/{seg(webhook_id)}/test")


def rotate_webhook_secret(webhook_id: str) -> Request:
    return Request("POST", f"/v1/webhooks/{seg(webhook_id)}/secret")


def list_deliveries(webhook_id: str, limit: Optional[int]) -> Request:
    return Request("GET", f"/v1/webhooks/{seg(webhook_id)}/deliveries", query={"limit": limit})
