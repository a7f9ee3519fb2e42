"""The package's shape, as docs/internals.md draws it: imports go down the layers (import-linter,
``make test``), a function-local import is an optional dependency or a documented lazy one, no
module imports another's ``_``-name, and modules and classes stay readable in size."""
import ast
import subprocess
import sys
from pathlib import Path


PACKAGE = Path(__file__).resolve().parent.parent / "pyvw_lite"

# Third-party packages a function may import: optional extras, and the pieces of numba and rich
# that only compiling or a live terminal needs.
OPTIONAL = {"pandas", "matplotlib", "distributed", "dask", "sklearn", "scipy", "rich", "numba",
            "llvmlite", "numpy"}

# Modules of this package a function may import, by importing file, and why it waits.
LAZY = {
    "__init__.py": (("pyvw_lite.workspace",),
                    "importing the package is cheap; numba loads with the first Workspace"),
    "cli/main.py": (("pyvw_lite.",),
                    "the command line answers --help and typos without loading numba"),
    "cli/app.py": (("pyvw_lite.",), "each subcommand loads only what it runs"),
    "cli/data.py": (("pyvw_lite.datasets", "pyvw_lite.synthetic"),
                    "`datasets` and `generate` load only what their subcommand runs"),
    "cli/crowd.py": (("pyvw_lite.distributed",),
                     "`pyvw-lite crowd` loads the sharded run only with --executor"),
    "crowd/run.py": (("pyvw_lite.crowd", "pyvw_lite.jit"),
                     "`pyvw-lite crowd` loads the kernels of the method it fits"),
    "cli/bench.py": (("pyvw_lite.synthetic",), "data is generated only when missing"),
    "cli/crowd_bench.py": (("pyvw_lite.synthetic",), "data is generated only when missing"),
    "api/crowd.py": (("pyvw_lite.crowd",),
                     "an aggregator loads numba when it is fitted, not when imported"),
    "api/online.py": (("pyvw_lite.workspace",),
                      "an estimator loads numba when it is fitted, not when imported"),
    "api/sklearn.py": (("pyvw_lite.workspace", "pyvw_lite.reductions"),
                       "scikit-learn's discovery imports every estimator; numba loads on fit"),
    "workflow/experiment.py": (("pyvw_lite.workspace", "pyvw_lite.jit"),
                               "an experiment loads the learner when it first trains one"),
    "datasets/__init__.py": (("pyvw_lite.io", "pyvw_lite.datasets"),
                             "the data's paths need no numba; only a download converts"),
    "workspace.py": (("pyvw_lite.distributed",),
                     "a plain run loads no scale-out code; --executor loads the sharded run"),
    "run/driver.py": (("pyvw_lite.learner.compile",),
                      "only a cold start compiles the learning kernels in a helper process"),
    "options.py": (("pyvw_lite.vw_options",),
                   "VW's option list is read only to name an option VW has and we lack"),
}


def python_files():
    return sorted(PACKAGE.rglob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def imported_module(path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The absolute names an import statement in ``path`` imports from."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        return [node.module]
    package = ["pyvw_lite", *path.relative_to(PACKAGE).parent.parts]
    base = package[:len(package) - (node.level - 1)]
    return [".".join(base + ([node.module] if node.module else []))]


def function_local_imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield node


def test_the_imports_keep_the_layers():
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache"], cwd=PACKAGE.parent, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_function_local_imports_are_optional_or_documented_lazy_ones():
    stdlib = set(sys.stdlib_module_names)
    wrong = []
    for path in python_files():
        allowed, _ = LAZY.get(relative(path), ((), ""))
        for node in function_local_imports(path):
            for name in imported_module(path, node):
                top = name.split(".")[0]
                if top == "pyvw_lite":
                    if not any(name == prefix or name.startswith(prefix)
                               for prefix in allowed):
                        wrong.append(f"{relative(path)}:{node.lineno}: {name}")
                elif top not in stdlib and top not in OPTIONAL:
                    wrong.append(f"{relative(path)}:{node.lineno}: {name} (third-party)")
    assert not wrong, "function-local imports not in tests/test_layers.py's LAZY:\n" + \
        "\n".join(wrong)


def test_no_module_imports_another_modules_private_names():
    wrong = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                private = [alias.name for alias in node.names
                           if alias.name.startswith("_") and not alias.name.startswith("__")]
                if private:
                    wrong.append(f"{relative(path)}:{node.lineno}: {private}")
    assert not wrong, "\n".join(wrong)


# numba kernel modules: a kernel is one flat function per step, and the steps of one learner
# stay in one file so that they inline into each other (docs/internals.md)
LONG_MODULES = {"learners/gd.py", "reductions/dyad.py", "crowd/kernels.py"}


def test_modules_and_classes_stay_readable_in_size(limit_lines=700, limit_class=400):
    wrong = []
    for path in python_files():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > limit_lines and relative(path) not in LONG_MODULES:
            wrong.append(f"{relative(path)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > limit_class:
                wrong.append(f"{relative(path)}: class {node.name}: "
                             f"{node.end_lineno - node.lineno + 1} lines")
    assert not wrong, "\n".join(wrong)
