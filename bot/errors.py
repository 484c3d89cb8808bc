"""One root error for papertide; subclasses carry the fields a caller needs.

Every message is one line fit for a terminal or a chat reply.
"""

from __future__ import annotations


class PapertideError(Exception):
    """Root of every error papertide raises on purpose."""


class ConfigError(PapertideError):
    """A setting is missing or invalid; `variable` names what to set."""

    def __init__(self, message: str, *, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class StoreError(PapertideError):
    """The database cannot be reached or migrated."""


class TopicsFileError(PapertideError):
    """The topics catalog is malformed; names the file, line and field."""

    def __init__(
        self, path: str, message: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        where = f"{path}:{line}" if line is not None else path
        what = f" [{field}]" if field else ""
        super().__init__(f"{where}{what}: {message}")
        self.path = path
        self.message = message
        self.line = line
        self.field = field


class SourceError(PapertideError):
    """A source could not be read; `source` names it, `url` where it failed."""

    def __init__(self, source: str, message: str, *, url: str | None = None) -> None:
        super().__init__(f"{source}: {message}" + (f" ({url})" if url else ""))
        self.source = source
        self.url = url


class QueryError(PapertideError):
    """A query is malformed or over a limit; `position` is 0-based where known."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message if position is None else f"{message} at {position}")
        self.position = position
