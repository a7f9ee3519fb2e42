"""pyvw_lite: a Vowpal-Wabbit-style online learner in numpy + numba, built for rater-task data.

Importing the package is cheap; numba loads only when a learner is built.
"""
from ._version import __version__

__all__ = ["Workspace", "__version__"]


def __getattr__(name):
    if name == "Workspace":
        from .workspace import Workspace
        return Workspace
    raise AttributeError(name)
