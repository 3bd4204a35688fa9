"""Where the SDK finds its base URL and API key: arguments, then the environment, then the CLI's file.

The CLI keeps ``base_url`` and ``api_key`` in ``$XDG_CONFIG_HOME/paddock/config.toml`` (or
``~/.config/paddock/config.toml``), written by ``paddock config set-url`` and ``set-key``
(cli/config/path.ts, cli/config/file.ts); the SDK reads the same file the same way.
"""

import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, Mapping, Optional
from urllib.parse import urlsplit

from ._errors import ConfigError, InsecureBaseUrlError, MalformedCredentialError

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as _toml

#: The only hosts a credential may travel to over plain http: this machine.
_CLEARTEXT_HOSTS = frozenset({"localhost", "127.0.0.1"})


def config_path(env: Optional[Mapping[str, str]] = None) -> str:
    """The CLI's config file: ``$XDG_CONFIG_HOME/paddock/config.toml``, else ``~/.config/paddock/config.toml``."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME")
    # The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    base = xdg if xdg and xdg.startswith("/") else os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "paddock", "config.toml")


def read_config_file(path: str) -> Dict[str, str]:
    """The ``base_url`` and ``api_key`` the file holds; a missing file is an empty config."""
    try:
        with open(path, "rb") as f:
            data = _toml.load(f)
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise ConfigError(f"Cannot read {path}: {err.strerror}") from None
    except _toml.TOMLDecodeError as err:
        raise ConfigError(
            f"{path} is not valid TOML: {str(err).splitlines()[0]}. Fix or delete the file, then set it again "
            "with `paddock config set-url` and `paddock config set-key`."
        ) from None
    return {k: data[k] for k in ("base_url", "api_key") if isinstance(data.get(k), str)}


def check_base_url(value: str) -> str:
    """Checks a base URL against the https rule and answers it normalised (no trailing slash).

    An API key is a full-privilege, long-lived credential, so it never travels in cleartext:
    http:// is refused unless the host is localhost or 127.0.0.1 (as shared/sdk/base-url.ts).
    """
    raw = value.strip()
    try:
        url = urlsplit(raw)
        hostname = url.hostname
        url.port  # raises on a port that is not a number
    except ValueError:
        raise InsecureBaseUrlError(raw, f'"{raw}" is not a valid URL: give a base address such as https://paddock.example.com.') from None
    scheme = url.scheme.lower()
    if scheme not in ("http", "https") or not hostname:
        if scheme in ("http", "https") or not scheme:
            raise InsecureBaseUrlError(raw, f'"{raw}" is not a valid URL: give a base address such as https://paddock.example.com.')
        raise InsecureBaseUrlError(raw, f"Refusing {raw}: the base address must start with https:// (or http:// for localhost).")
    if scheme == "http" and hostname not in _CLEARTEXT_HOSTS:
        raise InsecureBaseUrlError(
            raw,
            f"Refusing {raw}: an API key is a full-privilege, long-lived credential and must not travel in cleartext. "
            "Use an https:// address (plain http:// is allowed only for localhost and 127.0.0.1).",
        )
    if url.username is not None or url.password is not None:
        raise InsecureBaseUrlError(raw, f"Refusing {raw}: the base address must not carry a user name or password.")
    if url.query or url.fragment or raw.endswith(("?", "#")):
        raise InsecureBaseUrlError(raw, f"Refusing {raw}: the base address must not have a query or fragment.")
    netloc = url.netloc.lower()
    default_port = ":443" if scheme == "https" else ":80"
    if netloc.endswith(default_port):
        netloc = netloc[: -len(default_port)]
    return f"{scheme}://{netloc}{url.path.rstrip('/')}"


_CREDENTIAL = re.compile(r"[^\x21-\x7e]")


def check_api_key(value: Optional[str]) -> Optional[str]:
    """The key as a header will carry it (ends trimmed); ``None`` for an empty one."""
    sent = (value or "").strip()
    if not sent:
        return None
    if _CREDENTIAL.search(sent):
        raise MalformedCredentialError()
    return sent


@dataclass(frozen=True)
class Settings:
    """The base URL and API key in effect, and where each came from (argument, env, file)."""

    base_url: str
    api_key: Optional[str]
    base_url_source: str
    api_key_source: str


def resolve_settings(
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    require_key: bool = True,
) -> Settings:
    """Arguments first, then ``PADDOCK_API_KEY`` / ``PADDOCK_BASE_URL``, then the CLI's config file.

    The file is read only when an argument and the environment leave something unset.
    """
    env = os.environ if env is None else env
    key, key_source = (api_key, "argument") if api_key else (env.get("PADDOCK_API_KEY") or None, "env")
    url, url_source = (base_url, "argument") if base_url else (env.get("PADDOCK_BASE_URL") or None, "env")
    if not key or not url:
        path = config_path(env)
        file = read_config_file(path)
        if not key and file.get("api_key"):
            key, key_source = file["api_key"], "file"
        if not url and file.get("base_url"):
            url, url_source = file["base_url"], "file"
    if not url:
        raise ConfigError(
            "No Paddock base URL: pass base_url=, set PADDOCK_BASE_URL, or run `paddock config set-url`."
        )
    if require_key and not key:
        raise ConfigError("No Paddock API key: pass api_key=, set PADDOCK_API_KEY, or run `paddock config set-key`.")
    return Settings(
        base_url=check_base_url(url),
        api_key=check_api_key(key),
        base_url_source=url_source,
        api_key_source=key_source if key else "none",
    )
