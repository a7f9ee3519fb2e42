"""``Workspace``: the pyvw-style façade over a learner, its model files and the run.

The same object serves the command line (``run``) and Python (``learn``/``predict``/``save``)::

    >>> from pyvw_lite import Workspace
    >>> ws = Workspace("--loss_function logistic -b 20 --quiet")
    >>> _ = ws.learn(["1 |rater r_1 |task t_9", "-1 |rater r_2 |task t_9"])
    >>> ws.predict("|rater r_1 |task t_9") > 0
    True
"""
from __future__ import annotations

from typing import Sequence, TextIO

from .distributed.learn import ShardedDriver
from .io.model_io import ModelData
from .io.vw_text import ParsedBatch, format_prediction
from .learner import audit, persist
from .learner.checks import ParseError
from .learner.core import Learner, read_options
from .options import Options
from .run.driver import Driver

__all__ = ["ParseError", "Workspace", "format_prediction"]


class Workspace(Learner):
    """A learner configured by VW options; see the module docstring."""

    def __init__(self, args: str | Sequence[str] | Options | None = None, *,
                 arg_str: str | None = None, stdout: TextIO | None = None,
                 stderr: TextIO | None = None, **keywords):
        """A learner from VW options as pyvw takes them (a command line, an argv list and/or
        keyword values; ``arg_str`` is pyvw's name of the command line), resuming the model
        file ``-i`` names."""
        options, model = read_options(args, arg_str=arg_str, **keywords)
        super().__init__(options, model, stdout=stdout, stderr=stderr)

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, kind, error, trace) -> None:
        """As pyvw's: ``with Workspace(...) as ws`` calls :meth:`finish` at the end of the block
        (not after an exception: a half-learned model is not saved over a good one)."""
        if kind is None:
            self.finish()

    def model_data(self, predict_only: bool | None = None) -> ModelData:
        """The model as a model file holds it (:func:`pyvw_lite.learner.persist.model_data`)."""
        return persist.model_data(self, predict_only)

    def save(self, path: str, predict_only: bool | None = None) -> None:
        """Write the model to ``path`` atomically."""
        persist.save(self, path, predict_only)

    def finish(self) -> None:
        """Write the files the options name for the end of a run, as VW's ``finish()`` does:
        ``-f`` (the model, atomically) and ``--readable_model``.  The workspace stays usable."""
        persist.finish(self)

    def write_readable_model(self, path: str) -> None:
        """Write VW's --readable_model text to ``path`` atomically."""
        persist.write_readable_model(self, path)

    def resume_lines(self) -> list[str]:
        """The learner's state after ``:1`` in a text dump (--readable_model, --invert_hash)."""
        return persist.resume_lines(self)

    def feature_names(self, batch: ParsedBatch, row: int):
        """(name, slot, value) of every flattened feature of one example, VW's audit names."""
        return audit.feature_names(self, batch, row)

    def audit_text(self, batch: ParsedBatch, row: int) -> str:
        """VW's --audit lines for one example (:func:`pyvw_lite.learner.audit.audit_text`)."""
        return audit.audit_text(self, batch, row)

    def run(self) -> int:
        """Run the VW-style job the options describe (what the ``pyvw-lite`` command does)."""
        if self.options.executor:
            return ShardedDriver(self).run()
        return Driver(self).run()
