"""pyvw_lite: a Vowpal-Wabbit-style online learner in numpy + numba, built for rater-task data.

Importing the package is cheap; numba loads only when a learner is built.
"""
from ._version import __version__

TYPE_CHECKING = False  # typing's flag without importing typing (start-up time)
if TYPE_CHECKING:  # for type checkers and the API reference; at run time, __getattr__ below
    from .workspace import Workspace

__all__ = ["Workspace", "__version__"]


def __getattr__(name):
    if name == "Workspace":
        from .workspace import Workspace
        return Workspace
    raise AttributeError(name)
