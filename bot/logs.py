"""Log lines: a stable event name plus its structured fields, as `key=value` pairs.

Modules log `log.info("poll.done", extra={"source": name, "new": 12})`; this formatter
prints the fields so operators can grep and parse them.
"""

from __future__ import annotations

import logging

# Attributes every LogRecord has; anything else came from `extra=`.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        if not fields:
            return line
        pairs = " ".join(f"{k}={_value(v)}" for k, v in fields.items())
        head, sep, tail = line.partition("\n")  # keep a traceback below the fields
        return f"{head} {pairs}{sep}{tail}"


def _value(value: object) -> str:
    text = str(value)
    return repr(text) if (" " in text or "=" in text or not text) else text


def setup_logging(level: int = logging.INFO) -> None:
    """Root logging for long-running commands (`serve`, `worker`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(KeyValueFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    # One line per HTTP request would drown the service's own events (and cost CPU).
    logging.getLogger("httpx").setLevel(logging.WARNING)
