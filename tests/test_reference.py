"""The generated reference pages against the code: docs/reference/cli.md names every option of
the learner (the option table) with its default and help text, and every subcommand of the CLI
with each of its options; docs/reference/python.md documents exactly the ``__all__`` of
``pyvw_lite`` and of every module of ``pyvw_lite.api``, and ``__all__`` names every public class
and function a module defines.  ``python tools/reference.py`` rewrites both pages."""
from __future__ import annotations

import html
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import typer.main

import pyvw_lite.api
from pyvw_lite.cli.app import app
from pyvw_lite.cli.main import SUBCOMMANDS
from pyvw_lite.options import FLAG, LIST, OPTIONS

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "docs" / "reference" / "cli.md"
PYTHON = ROOT / "docs" / "reference" / "python.md"
REGENERATE = "run python tools/reference.py"

_spec = importlib.util.spec_from_file_location("reference_tool", ROOT / "tools" / "reference.py")
reference_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_tool)


def cells(row: str) -> list[str]:
    """A markdown table row's cells as a reader sees them: escapes and entities undone."""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [html.unescape(re.sub(r"\\(.)", r"\1", re.sub(r"</?code>", "", part))).strip()
            for part in parts]


def sections(page: str, level: str) -> dict[str, str]:
    """Heading text -> the text under it, up to the next heading of the same level or higher."""
    found = {}
    parts = re.split(rf"^({level} .*)$", page, flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2]):
        found[heading[len(level) + 1:].strip()] = body
    return found


def option_rows(text: str) -> dict[str, list[str]]:
    """Each option row of the tables in ``text``, by every flag its first cell names."""
    rows = {}
    for line in text.splitlines():
        row = cells(line) if line.startswith("| ") else []
        if len(row) == 4 and row[0].startswith("-"):  # not a header, nor the refused options
            for flag in re.findall(r"--?[\w-]+", row[0]):
                rows[flag] = row
    return rows


def test_the_pages_are_what_the_code_generates():
    assert reference_tool.main(["--check"]) == 0, REGENERATE


def test_every_learner_option_is_listed_with_its_default_and_help():
    learner = sections(CLI.read_text(), "##")["The learner"]
    rows = option_rows(learner)
    for opt in OPTIONS:
        assert f"--{opt.name}" in rows, f"--{opt.name} is missing from {CLI.name}: {REGENERATE}"
        names, value, default, description = rows[f"--{opt.name}"]
        if opt.short:
            assert f"-{opt.short}" in names.split(", "), (opt.name, names)
        expected = ("off" if opt.kind == FLAG else "none (repeatable)" if opt.kind == LIST
                    else "not set" if opt.default is None else str(opt.default))
        assert default == expected, (opt.name, default, expected)
        assert description.startswith(" ".join(opt.help.split())), (opt.name, description)
        for choice in opt.choices or ():
            assert choice in value + description, (opt.name, choice)
    table_names = {opt.name for opt in OPTIONS} | {opt.short for opt in OPTIONS if opt.short}
    stale = [flag for flag in rows if flag.lstrip("-") not in table_names]
    assert not stale, f"{stale} are no options of the learner: {REGENERATE}"


def test_every_subcommand_and_its_options_are_listed():
    group = typer.main.get_command(app)
    assert set(group.commands) == set(SUBCOMMANDS), \
        "pyvw-lite --help's command list (cli/main.py SUBCOMMANDS) and the typer app differ"
    documented = {heading.removeprefix("pyvw-lite "): body
                  for heading, body in sections(CLI.read_text(), "###").items()
                  if heading.startswith("pyvw-lite ")}
    assert set(documented) == set(group.commands), REGENERATE
    for name, command in group.commands.items():
        rows = option_rows(documented[name])
        for param in command.params:
            if param.param_type_name == "argument":
                assert f"| <code>{param.name.upper()}</code> |" in documented[name], \
                    (name, param.name)
                continue
            if param.hidden:
                continue
            for flag in param.opts + param.secondary_opts:
                assert flag in rows, f"{name} {flag} is missing: {REGENERATE}"
            row = rows[param.opts[0]]
            assert row[3].startswith(" ".join((param.help or "").split())), (name, param.name)
            if not param.is_flag and not param.required and param.default not in (None, [], ()):
                assert row[2] == str(param.default), (name, param.name, row[2], param.default)
        known = {flag for p in command.params if p.param_type_name == "option"
                 for flag in p.opts + p.secondary_opts} | {"-h", "--help"}
        stale = set(rows) - known
        assert not stale, f"{name}: {stale} are no options of the command: {REGENERATE}"


def api_modules() -> list[str]:
    return ["pyvw_lite", "pyvw_lite.api"] + sorted(
        f"pyvw_lite.api.{info.name}" for info in pkgutil.iter_modules(pyvw_lite.api.__path__)
        if not info.name.startswith("_"))


def documented_members(page: str) -> dict[str, list[str]]:
    """Module -> the members its ``::: module`` block lists."""
    blocks = re.split(r"^::: ", page, flags=re.MULTILINE)[1:]
    found = {}
    for block in blocks:
        module, _, rest = block.partition("\n")
        members = rest.split("members:", 1)[1] if "members:" in rest else ""
        found[module.strip()] = re.findall(r"^\s+- (\S+)$", members.split("\n\n")[0],
                                           flags=re.MULTILINE)
    return found


def test_the_api_reference_documents_each_modules_all():
    documented = documented_members(PYTHON.read_text())
    for name in api_modules():
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), f"{name} has no __all__"
        for public in module.__all__:
            assert getattr(module, public) is not None, (name, public)
        assert documented.get(name, []) == list(module.__all__), f"{name}: {REGENERATE}"
    assert set(documented) <= set(api_modules())


def test_all_names_every_public_class_and_function_a_module_defines():
    for name in api_modules():
        module = importlib.import_module(name)
        defined = {key for key, value in vars(module).items()
                   if not key.startswith("_") and (inspect.isclass(value)
                                                   or inspect.isfunction(value))
                   and value.__module__ == name}
        assert defined <= set(module.__all__), f"{name}: {defined - set(module.__all__)} " \
            "are public but not in __all__ (prefix them with _ or add them)"
