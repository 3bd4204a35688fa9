"""The errors the SDK raises: every one is a PaddockError, so callers can catch the family at once."""

from typing import Any, Dict, Optional


class PaddockError(Exception):
    """Base of every error the SDK raises.

    ``code``, ``status``, ``request_id`` and ``retry_after`` are set when the API answered with an
    error (see :class:`PaddockApiError`); they are ``None`` for errors raised before or without an
    answer (a connection that failed, an insecure base URL, a missing API key).
    """

    code: Optional[str] = None
    status: Optional[int] = None
    request_id: Optional[str] = None
    retry_after: Optional[int] = None


class PaddockApiError(PaddockError):
    """The API answered with an error: an RFC 9457 problem document, or something unexpected.

    Branch on ``code`` (stable, machine-readable), never on ``detail``. ``status`` is the HTTP
    status, or ``None`` when the error arrived inside a stream that had already started.
    """

    def __init__(
        self,
        *,
        status: Optional[int],
        code: str,
        detail: str,
        title: Optional[str] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[int] = None,
        problem: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(f"{detail} ({code})")
        self.status = status
        self.code = code
        self.detail = detail
        self.title = title if title is not None else detail
        self.request_id = request_id
        #: Seconds to wait before retrying, from the Retry-After header of a 429 or 503.
        self.retry_after = retry_after
        #: The whole problem document, with any extra members.
        self.problem = problem


class InsecureBaseUrlError(PaddockError):
    """A base URL the SDK refuses to send a credential to (https only, http for localhost)."""

    def __init__(self, base_url: str, message: str) -> None:
        super().__init__(message)
        self.base_url = base_url


class PaddockConnectionError(PaddockError):
    """The API could not be reached at all (DNS, refused connection, TLS, a dropped stream)."""

    def __init__(self, base_url: str, message: str) -> None:
        super().__init__(message)
        self.base_url = base_url


class MalformedCredentialError(PaddockError):
    """A credential holding a character no key has (space, line break, control character).

    The message never repeats the credential.
    """

    def __init__(self) -> None:
        super().__init__(
            "The API key holds a character no credential has (a space, a line break or a control character)."
        )
        self.credential = "api_key"


class ConfigError(PaddockError):
    """The configuration is missing or unreadable: no base URL, no API key, a broken config file."""
