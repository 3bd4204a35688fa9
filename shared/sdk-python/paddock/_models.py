"""What the handle's methods answer, beyond the API's own objects (paddock._types)."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional

from ._errors import PaddockConnectionError
from ._http import stream_error_of

OutputCallback = Callable[[str], Any]


@dataclass
class CommandResult:
    """How a command ended, with its whole output."""

    #: The exit code; ``None`` when a signal ended the command.
    exit_code: Optional[int]
    stdout: str
    stderr: str
    #: Milliseconds from start to end.
    duration_ms: int
    #: The command ran out of its timeout and was killed.
    timed_out: bool = False
    #: SIGKILL, SIGTERM… when a signal ended it.
    signal: Optional[str] = None
    #: The server kept only the first part of the output.
    stdout_truncated: bool = False
    stderr_truncated: bool = False


@dataclass
class CommandLogs:
    """A background process's output kept so far."""

    stdout: str
    stderr: str


def result_of(answer: Mapping[str, Any]) -> CommandResult:
    """The non-streamed exec answer as a CommandResult."""
    return CommandResult(
        exit_code=answer.get("exitCode"),
        stdout=answer.get("stdout", ""),
        stderr=answer.get("stderr", ""),
        duration_ms=int(answer.get("durationMs", 0)),
        timed_out=bool(answer.get("timedOut", False)),
        signal=answer.get("signal"),
        stdout_truncated=bool(answer.get("stdoutTruncated", False)),
        stderr_truncated=bool(answer.get("stderrTruncated", False)),
    )


class OutputCollector:
    """Reads the lines of an exec or process-output stream: output to the callbacks, then the end."""

    def __init__(self, base_url: str, on_stdout: Optional[OutputCallback], on_stderr: Optional[OutputCallback], started_at: Optional[str] = None) -> None:
        self.base_url = base_url
        self.on_stdout = on_stdout
        self.on_stderr = on_stderr
        self.stdout: List[str] = []
        self.stderr: List[str] = []
        self.end: Optional[Dict[str, Any]] = None
        self.started_at = started_at

    def take(self, event: Dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "stdout":
            self.stdout.append(event["data"])
            if self.on_stdout:
                self.on_stdout(event["data"])
        elif kind == "stderr":
            self.stderr.append(event["data"])
            if self.on_stderr:
                self.on_stderr(event["data"])
        elif kind == "exit":
            self.end = event
        elif kind == "error":
            raise stream_error_of(event)

    def result(self) -> CommandResult:
        if self.end is None:
            raise PaddockConnectionError(self.base_url, "The output stream ended before the command did.")
        end = self.end
        duration = end.get("durationMs")
        if duration is None:
            duration = _between(self.started_at, end.get("endedAt"))
        return CommandResult(
            exit_code=end.get("exitCode"),
            stdout="".join(self.stdout),
            stderr="".join(self.stderr),
            duration_ms=int(duration or 0),
            timed_out=bool(end.get("timedOut", False)),
            signal=end.get("signal"),
            stdout_truncated=bool(end.get("stdoutTruncated", False)),
            stderr_truncated=bool(end.get("stderrTruncated", False)),
        )

    def logs(self) -> CommandLogs:
        return CommandLogs(stdout="".join(self.stdout), stderr="".join(self.stderr))


def _between(start: Optional[str], end: Optional[str]) -> Optional[int]:
    if not start or not end:
        return None
    return max(0, int((_instant(end) - _instant(start)).total_seconds() * 1000))


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))  # 3.9's fromisoformat takes no Z
