"""The jinja2 environment for web pages and the mails the web flow sends.

HTML autoescapes everything; `.txt` templates (plain-text mail bodies) do not.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2

import bot


def templates_dir() -> Path:
    """templates/ beside the package in a checkout, bot/_templates in a wheel."""
    packaged = Path(bot.__file__).parent / "_templates"
    return packaged if packaged.is_dir() else Path(bot.__file__).parent.parent / "templates"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """One shared environment; templates are compiled once per process."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "xml"), default_for_string=True, default=False
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def render(name: str, **context: object) -> str:
    """Render templates/<name> with `context`."""
    return environment().get_template(name).render(**context)
