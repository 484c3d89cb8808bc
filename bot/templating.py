"""The one jinja2 environment: web pages, the subscription mails and the weekly digest.

templates/ sits beside the packages in a checkout and ships as bot/_templates in a
wheel. HTML (`.html`, `.xml`, `.html.j2`) is autoescaped; plain-text mail bodies
(`.txt`, `.txt.j2`) are not, because a reader would see "&amp;" in them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

import bot


@cache
def templates_dir() -> Path:
    """templates/ beside the package in a checkout, bot/_templates in a wheel."""
    packaged = Path(bot.__file__).parent / "_templates"
    return packaged if packaged.is_dir() else Path(bot.__file__).parent.parent / "templates"


@cache
def environment() -> jinja2.Environment:
    """One shared environment; each template is compiled once per process."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "xml", "html.j2"), default_for_string=True, default=False
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # Templates ship with the code: compile each once, never stat its file per render.
        auto_reload=False,
    )


def render(name: str, **context: object) -> str:
    """Render templates/<name> with `context`."""
    return environment().get_template(name).render(**context)


def read_static(name: str) -> str:
    """A static file under templates/ (a stylesheet), as text."""
    return (templates_dir() / name).read_text(encoding="utf-8")
