"""``Workspace``: the pyvw-style façade over a learner, its model files and the run.

The same object serves the command line (``run``) and Python (``learn``/``predict``/``save``)::

    >>> from pyvw_lite import Workspace
    >>> ws = Workspace("--loss_function logistic -b 20 --quiet")
    >>> _ = ws.learn(["1 |rater r_1 |task t_9", "-1 |rater r_2 |task t_9"])
    >>> ws.predict("|rater r_1 |task t_9") > 0
    True

A workspace holds a :class:`~pyvw_lite.learner.core.Learner` (``ws.learner``) and hands every
call on: learning and predicting to the learner, model files to ``learner/persist.py``, audit
text to ``learner/audit.py``, the run to ``run.driver.Driver`` (with ``--executor``,
``distributed.learn.ShardedDriver``), each given the learner itself.  The learner's model and
settings read through it by name (``ws.weights``, ``ws.state``, ``ws.reduction``, ...: the
properties below; anything else is ``ws.learner``'s).
"""
from __future__ import annotations

from operator import attrgetter
from typing import Sequence, TextIO

import numpy as np

from .io.model_io import ModelData
from .io.vw_text import ParsedBatch, format_prediction
from .learner import audit, persist
from .learner.checks import ParseError
from .learner.core import Learner
from .options import Options
from .run.driver import Driver

__all__ = ["ParseError", "Workspace", "format_prediction"]


def learner_attribute(name: str) -> property:
    """A read-only attribute of the workspace: its learner's ``name`` (an array is the learner's
    own: changing it in place changes the learner)."""
    return property(attrgetter("learner." + name), doc=f"The learner's ``{name}``.")


class Workspace:
    """A learner configured by VW options, with its model files and the VW run; see the module
    docstring."""

    # the learner's options and model, as pyvw users (and the tests) read them
    options = learner_attribute("options")
    weights = learner_attribute("weights")
    state = learner_attribute("state")
    params = learner_attribute("params")
    touched = learner_attribute("touched")
    last_rows = learner_attribute("last_rows")
    # what the options decided (the learner's configuration)
    bits = learner_attribute("bits")
    mask = learner_attribute("mask")
    eta = learner_attribute("eta")
    adaptive = learner_attribute("adaptive")
    normalized = learner_attribute("normalized")
    invariant = learner_attribute("invariant")
    loss_name = learner_attribute("loss_name")
    interactions = learner_attribute("interactions")
    reduction = learner_attribute("reduction")
    dyadic = learner_attribute("dyadic")
    active = learner_attribute("active")
    latent_columns = learner_attribute("latent_columns")
    latent_scale = learner_attribute("latent_scale")  # --dyad_decay's factor so far
    _latent_columns = latent_columns  # the name earlier callers (and tests) use

    def __init__(self, args: str | Sequence[str] | Options | None = None, *,
                 arg_str: str | None = None, stdout: TextIO | None = None,
                 stderr: TextIO | None = None, **keywords):
        """A learner from VW options as pyvw takes them (a command line, an argv list and/or
        keyword values; ``arg_str`` is pyvw's name of the command line), resuming the model
        file ``-i`` names."""
        self.learner = Learner.from_args(args, arg_str=arg_str, stdout=stdout, stderr=stderr,
                                         **keywords)

    @property
    def slot_multiplier(self) -> int:
        """How the learner places feature hashes in its weight table (settable: the tests build
        models of an earlier layout)."""
        return self.learner.slot_multiplier

    @slot_multiplier.setter
    def slot_multiplier(self, value: int) -> None:
        self.learner.slot_multiplier = value

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, kind, error, trace) -> None:
        """As pyvw's: ``with Workspace(...) as ws`` calls :meth:`finish` at the end of the block
        (not after an exception: a half-learned model is not saved over a good one)."""
        if kind is None:
            self.finish()

    def parse(self, lines, *, record_spans: bool = False, source: str = "<input>") -> ParsedBatch:
        """Parse VW text lines (one string, or an iterable of lines) into a batch."""
        return self.learner.parse(lines, record_spans=record_spans, source=source)

    def learn(self, examples) -> np.ndarray:
        """Learn from VW lines (a string, a list of strings) or a parsed batch, in order; the
        progressive predictions, one per example used (a malformed line is skipped with a
        warning: ``last_rows`` says which rows they belong to).  A multiclass model's are
        classes as :meth:`predict` gives them (1..K, or the names of --named_labels)."""
        predictions = self.learner.learn(examples)
        reduction = self.learner.reduction
        return predictions if reduction is None else reduction.class_labels(predictions)

    def predict(self, examples):
        """Predictions for VW lines or a parsed batch, one per example used; the model is not
        changed.  One line (a string without a newline) gives one number, as pyvw's.  A
        multiclass model predicts classes as the data writes them: 1..K (0..K-1 under 0-based
        labels) or the names of --named_labels."""
        return self.learner.predict(examples)

    def predict_with_scores(self, examples) -> tuple[np.ndarray, np.ndarray]:
        """Predictions and the raw scores behind them (for a multiclass reduction, class indices
        0..K-1 and the class scores of --oaa/--sft as an (n, K) array)."""
        return self.learner.predict_with_scores(examples)

    def h_min(self, examples, target: float = 0.0, label: float | None = None):
        """The smallest importance weight whose update would move each example's prediction to
        ``target`` with label ``label``; by default the reverting weight.  One line
        gives one number, several an array (:meth:`Learner.h_min
        <pyvw_lite.learner.core.Learner.h_min>`)."""
        return self.learner.h_min(examples, target, label)

    def h_min_array(self, examples, target: float = 0.0,
                    label: float | None = None) -> np.ndarray:
        """:meth:`h_min` as an array whatever it was given."""
        return self.learner.h_min_array(examples, target, label)

    def repeat_pass(self) -> None:
        """The examples from now on repeat ones already learned (a later pass)."""
        self.learner.repeat_pass()

    def learning_kernels(self) -> tuple:
        """The kernels that learn from parsed examples in this configuration."""
        return self.learner.learning_kernels()

    def model_data(self, predict_only: bool | None = None) -> ModelData:
        """The model as a model file holds it (:func:`pyvw_lite.learner.persist.model_data`)."""
        return persist.model_data(self.learner, predict_only)

    def save(self, path: str, predict_only: bool | None = None) -> None:
        """Write the model to ``path`` atomically."""
        persist.save(self.learner, path, predict_only)

    def finish(self) -> None:
        """Write the files the options name for the end of a run, as VW's ``finish()`` does:
        ``-f`` (the model, atomically) and ``--readable_model``.  The workspace stays usable."""
        persist.finish(self.learner)

    def write_readable_model(self, path: str) -> None:
        """Write VW's --readable_model text to ``path`` atomically."""
        persist.write_readable_model(self.learner, path)

    def resume_lines(self) -> list[str]:
        """The learner's state after ``:1`` in a text dump (--readable_model, --invert_hash)."""
        return persist.resume_lines(self.learner)

    def feature_names(self, batch: ParsedBatch, row: int):
        """(name, slot, value) of every flattened feature of one example, VW's audit names."""
        return audit.feature_names(self.learner, batch, row)

    def audit_text(self, batch: ParsedBatch, row: int) -> str:
        """VW's --audit lines for one example (:func:`pyvw_lite.learner.audit.audit_text`)."""
        return audit.audit_text(self.learner, batch, row)

    def run(self) -> int:
        """Run the VW-style job the options describe (what the ``pyvw-lite`` command does)."""
        if self.learner.options.executor:  # imported here: a plain run loads no scale-out code
            from .distributed.learn import ShardedDriver
            return ShardedDriver(self.learner).run()
        return Driver(self.learner).run()
