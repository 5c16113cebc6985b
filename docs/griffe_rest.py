"""Griffe extension for the API pages: the docstrings are written with Sphinx roles
(``:class:`~fact_reasoner.settings.config.PipelineConfig```) and reST literal blocks (``::``); the site
renders them as Markdown, so a role becomes inline code (its last name with ``~``, as Sphinx
shows it), ``::`` a colon before the indented block, and a doctest a fenced code block."""

from __future__ import annotations

import re
from typing import Any

import griffe

#: ``:class:`~a.b.C``` / ``:func:`a.b``` / ``:mod:`title <a.b>``` — the role, an optional ``~``, the text
ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]*?)(?:\s*<([^`>]+)>)?`")
LITERAL = re.compile(r"::\n\n")


def _role(match: re.Match[str]) -> str:
    tilde, text, target = match.groups()
    if target:  # `title <target>`: the title
        return f"`{text.strip()}`"
    text = text.strip()
    return f"`{text.rsplit('.', 1)[-1] if tilde else text}`"


def _fence_doctests(text: str) -> str:
    """Doctest blocks (``>>>`` lines and their output, up to a blank line) as fenced code: as
    Markdown, ``[('a0', 'S', 0.86)]`` would read as a link."""
    if "```" in text:  # fenced already (or written in Markdown): left as it is
        return text
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        # an indented doctest is in a literal block (after ``::``) already: left as it is
        if line.startswith(">>>") and not inside:
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


def markdown(text: str) -> str:
    """A docstring in reST's conventions, as Markdown."""
    return _fence_doctests(LITERAL.sub(":\n\n", ROLE.sub(_role, text)))


class ReSTRoles(griffe.Extension):
    """Rewrite every docstring of the loaded objects with :func:`markdown`."""

    def on_object(self, *, obj: griffe.Object, loader: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """The top package: loaded last, without its own ``on_object``."""
        self.on_object(obj=pkg, loader=None)
