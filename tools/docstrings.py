"""A griffe extension for the API reference (mkdocs.yml loads it): the docstrings are written
for Python's help() and Sphinx's habits, the site renders markdown.

* a Sphinx role, ``:class:`BCC```, ``:meth:`~pyvw_lite.Workspace.finish``` or
  ``:func:`text <target>```, becomes inline code of the name it shows (``BCC``, ``finish``,
  ``text``);
* a paragraph ending in ``::`` (a literal block follows, indented: markdown's code block) ends
  in one colon, as Sphinx prints it;
* a doctest written flush with the text (``>>>`` lines and their output, up to a blank line)
  becomes a ``pycon`` code block, not a markdown quote;
* a signature the source does not show is taken from the imported object: the scikit-learn
  estimators' parameters (made from the option table when the class is defined) and defaults
  written as expressions (``DEFAULTS["nu"]``) shown by their values.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):`([^`]+)`")
LITERAL = re.compile(r"(\S)::$", re.MULTILINE)
DOCTEST = re.compile(r"^>>> .*?(?=\n[ \t]*\n|\Z)", re.MULTILINE | re.DOTALL)
RUNTIME = "pyvw_lite.api"  # the modules whose signatures are checked against the imported objects


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
    text = DOCTEST.sub(lambda match: f"```pycon\n{match.group(0)}\n```", text)
    return LITERAL.sub(r"\1:", ROLE.sub(shown, text))


def literal(default) -> bool:
    try:
        ast.literal_eval(str(default))
    except (ValueError, SyntaxError):
        return False
    return True


def runtime_object(path: str, module: str):
    """The imported object at ``path`` (None when the module does not import here: the
    scikit-learn estimators without scikit-learn)."""
    try:
        found = importlib.import_module(module)
    except ImportError:
        return None
    for part in path[len(module) + 1:].split(".") if path != module else []:
        found = getattr(found, part, None)
    return found


KINDS = {inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
         inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
         inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
         inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
         inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword}


def runtime_parameters(function, static: griffe.Parameters | None) -> griffe.Parameters:
    """The imported function's parameters; a static annotation is kept (it links), a default is
    its value's repr."""
    kept = {p.name: p.annotation for p in static} if static else {}
    made = []
    for param in inspect.signature(function).parameters.values():
        annotation = kept.get(param.name)
        if annotation is None and param.annotation is not inspect.Parameter.empty:
            annotation = param.annotation if isinstance(param.annotation, str) \
                else getattr(param.annotation, "__name__", str(param.annotation))
        default = None if param.default is inspect.Parameter.empty else repr(param.default)
        made.append(griffe.Parameter(param.name, annotation=annotation, kind=KINDS[param.kind],
                                     default=default))
    return griffe.Parameters(*made)


def sync_signatures(obj: griffe.Object) -> None:
    """Give the functions and classes under ``obj`` the signatures Python sees."""
    for member in list(obj.members.values()):
        if member.is_alias:
            continue
        if member.is_module or member.is_class:
            sync_signatures(member)
        if member.is_class and "__init__" not in member.members:
            cls = runtime_object(member.path, member.module.path)
            if cls is not None and "__init__" in vars(cls):  # made when the class was defined
                init = griffe.Function("__init__", parameters=runtime_parameters(
                    cls.__init__, None), lineno=member.lineno, endlineno=member.lineno)
                member.set_member("__init__", init)
        if member.is_function and not all(literal(p.default) for p in member.parameters
                                           if p.default is not None):
            function = runtime_object(member.path, member.module.path)
            if function is not None:
                member.parameters = runtime_parameters(function, member.parameters)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        if pkg.path == RUNTIME.split(".")[0]:
            sync_signatures(pkg.members[RUNTIME.split(".")[1]])
