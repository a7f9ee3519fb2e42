"""A griffe extension for the API reference (mkdocs.yml loads it): the docstrings are written
for Python's help() and Sphinx's habits, the site renders markdown.

* a Sphinx role, ``:class:`BCC```, ``:meth:`~pyvw_lite.Workspace.finish``` or
  ``:func:`text <target>```, becomes inline code of the name it shows (``BCC``, ``finish``,
  ``text``);
* a paragraph ending in ``::`` (a literal block follows, indented: markdown's code block) ends
  in one colon, as Sphinx prints it.
"""
from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):`([^`]+)`")
LITERAL = re.compile(r"(\S)::$", re.MULTILINE)


def shown(match: re.Match) -> str:
    """What a role shows: its text before ``<target>``, or its target's last part after ``~``."""
    content = match.group(1)
    explicit = re.fullmatch(r"(.*?)\s*<[^>]+>", content, re.DOTALL)
    if explicit:
        name = explicit.group(1)
    elif content.startswith("~"):
        name = content[1:].rsplit(".", 1)[-1]
    else:
        name = content
    return f"`{' '.join(name.split())}`"


def markdown(text: str) -> str:
    return LITERAL.sub(r"\1:", ROLE.sub(shown, text))


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
