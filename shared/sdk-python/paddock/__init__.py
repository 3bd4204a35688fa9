"""Paddock's Python SDK: short-lived isolated sandboxes over Paddock's HTTP API.

    from paddock import Sandbox

    with Sandbox.create() as sbx:
        print(sbx.commands.run("echo hello").stdout)

``Sandbox`` and ``AsyncSandbox`` are one sandbox each (commands, files, previews); ``Paddock`` and
``AsyncPaddock`` hold the account-wide routes (account, secrets, allowlist, events, webhooks).
"""

from . import _types as types
from ._config import check_base_url, config_path
from ._errors import (
    ConfigError,
    InsecureBaseUrlError,
    MalformedCredentialError,
    PaddockApiError,
    PaddockConnectionError,
    PaddockError,
)
from ._http import __version__
from ._models import CommandLogs, CommandResult
from ._previews import PREVIEW_TOKEN_HEADER, AsyncPreview, AsyncPreviews, Preview, Previews
from .async_client import AsyncPaddock
from .async_sandbox import AsyncCommandHandle, AsyncCommands, AsyncFiles, AsyncSandbox
from .client import Paddock
from .sandbox import CommandHandle, Commands, Files, Sandbox

__all__ = [
    "AsyncCommandHandle",
    "AsyncCommands",
    "AsyncFiles",
    "AsyncPaddock",
    "AsyncPreview",
    "AsyncPreviews",
    "AsyncSandbox",
    "CommandHandle",
    "CommandLogs",
    "CommandResult",
    "Commands",
    "ConfigError",
    "Files",
    "InsecureBaseUrlError",
    "MalformedCredentialError",
    "PREVIEW_TOKEN_HEADER",
    "Paddock",
    "PaddockApiError",
    "PaddockConnectionError",
    "PaddockError",
    "Preview",
    "Previews",
    "Sandbox",
    "__version__",
    "check_base_url",
    "config_path",
    "types",
]
