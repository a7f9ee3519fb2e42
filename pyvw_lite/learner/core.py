"""The learner: made of what its options decide (a :class:`Configuration`) and its example checks
(an :class:`ExampleChecks`), it holds the model (weights, learning state, kernel parameters) and
runs the kernels of its reduction stack on parsed batches: learn, predict, h_min.  It opens no
files and prints no progress; the run (``driver``) does."""
from __future__ import annotations

import contextlib
import sys
from operator import attrgetter
from typing import Sequence, TextIO

import numpy as np

from ..io.model_io import ModelData, load_model
from ..io.vw_text import INITIAL, LABEL, NLABEL, WEIGHT, ParsedBatch
from ..jit import announce_compile
from ..learners import gd
from ..learners.losses import LOGISTIC
from ..options import Options, options_from
from ..reductions import interactions as interactions_mod
from ..reductions.dyad import dyadic_hmin_examples, lowest_latent_scale
from ..reductions.multiclass import UNLABELLED
from ..reductions.scorer import logistic
from .checks import ExampleChecks, check_finite
from .configuration import Configuration, writable
from .model_options import resumed_options
from .outputs import check_outputs


def one_line(examples, results: np.ndarray) -> bool:
    """Whether a call was given one line (a string without a line break) and has its one
    result: then predict and h_min answer with a number, as pyvw's predict does."""
    return isinstance(examples, str) and "\n" not in examples.strip() and results.size == 1


def read_options(args: str | Sequence[str] | Options | None = None, *,
                 arg_str: str | None = None, **keywords) -> tuple[Options, ModelData | None]:
    """VW options as pyvw takes them (a command line, an argv list and/or keyword values;
    ``arg_str`` is pyvw's name of the command line) and the model file ``-i`` names, read."""
    if arg_str is not None:  # pyvw's name of the command line
        if args is not None:
            raise TypeError("give the command line once: args or arg_str")
        args = arg_str
    options = options_from(args, **keywords)
    check_outputs(options)  # before the model is read: no output may name an input
    return options, load_model(options.initial_regressor) if options.initial_regressor else None


def setting(name: str, settable: bool = False) -> property:
    """An attribute of the learner that is its configuration's ``name``; read-only unless
    ``settable`` (then setting it sets the configuration's)."""
    def put(learner, value):
        setattr(learner.config, name, value)
    return property(attrgetter("config." + name), put if settable else None,
                    doc=f"``config.{name}``.")


class Learner:
    """A learner configured by VW options: ``learn``, ``predict`` and ``h_min`` on VW lines or
    parsed batches.  Its parts: ``config`` (a :class:`Configuration`: what the options decide),
    ``checks`` (an :class:`ExampleChecks`: parsing, and which examples it learns from) and the
    model it learns (``weights``, ``state``, ``params``, ``touched``).
    :class:`pyvw_lite.Workspace` is the façade that adds model files and the run."""

    # what the options decided, as the reductions, the run and the model files read it
    bits = setting("bits")
    mask = setting("mask")
    stride = setting("stride")
    latent = setting("latent")
    latent_columns = setting("latent_columns")
    _latent_columns = latent_columns  # the name earlier callers (and tests) use
    slot_multiplier = setting("slot_multiplier", settable=True)  # tests build old layouts
    models = setting("models")
    loss = setting("loss")
    loss_name = setting("loss_name")
    eta = setting("eta")
    adaptive = setting("adaptive")
    normalized = setting("normalized")
    invariant = setting("invariant")
    training = setting("training")
    hash_all = setting("hash_all")
    ignore = setting("ignore")
    interactions = setting("interactions")
    reduction = setting("reduction")
    scorer = setting("scorer")
    binary = setting("binary")
    active = setting("active")
    dyadic = setting("dyadic")

    def __init__(self, options: Options, model: ModelData | None = None, *,
                 stdout: TextIO | None = None, stderr: TextIO | None = None):
        """A learner from parsed options and, when they resume a model (``-i``), that model as
        read: it reads no file itself (:meth:`from_args` reads the options and the model as
        pyvw takes them)."""
        options = options_from(options)  # its own copy: a run may change it (--no_stdin's -d)
        if model is not None:
            options = resumed_options(options, model)
        elif options.initial_regressor:
            raise ValueError(f"-i {options.initial_regressor}: read the model first "
                             "(Learner.from_args)")
        self.model = model
        self.options = options
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self.quiet = bool(options.quiet)
        self.log_lines: list[str] = []
        self.config = Configuration(options, model, self.log)
        self.checks = ExampleChecks(self.config, self.log)
        self.weights, self.state, self.params, self.touched = self.config.tables(model, self.log)
        self.latent_scale = self.config.latent_scale  # --dyad_decay so far (repeat_pass)
        self.initial_t_shown = float(self.state[gd.T_SEEN]) if model is not None \
            else self.config.initial_t
        self.ode_step_caps = 0
        self.multiclass_log_loss = [0.0, 0.0]  # Σ -h·log p(true class), Σ h
        self.nan_predictions = 0
        self._scratch = None
        self.want_scores = False
        self.raw_scores = False  # class scores for -r (--oaa/--sft without --scores)
        self.requests = []

    @classmethod
    def from_args(cls, args: str | Sequence[str] | Options | None = None, *,
                  arg_str: str | None = None, stdout: TextIO | None = None,
                  stderr: TextIO | None = None, **keywords) -> "Learner":
        """A learner from VW options as pyvw takes them, resuming the model file ``-i`` names
        (:func:`read_options`)."""
        return cls(*read_options(args, arg_str=arg_str, **keywords), stdout=stdout,
                   stderr=stderr)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["stdout"] = state["stderr"] = None  # streams do not pickle
        state["_scratch"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(writable(state))  # kernels want writable arrays (memory maps)
        self.stdout, self.stderr = sys.stdout, sys.stderr

    def log(self, text: str) -> None:
        """Write a log line (``[warning] ...``) to stdout, unless --quiet."""
        if not self.quiet:
            self.stdout.write(text + "\n")

    def parse(self, lines, *, record_spans: bool = False, source: str = "<input>") -> ParsedBatch:
        """Parse VW text lines (one string, or an iterable of lines) into a batch."""
        return self.checks.parse(lines, record_spans=record_spans, source=source)

    def parse_chunk(self, buf, starts, ends, first_line, source, record_spans=False) -> ParsedBatch:
        """Parse the lines ``starts``/``ends`` of ``buf`` as this learner reads labels."""
        return self.checks.parse_chunk(buf, starts, ends, first_line, source, record_spans)

    def valid_rows(self, batch: ParsedBatch) -> np.ndarray:
        """Rows to learn from; malformed rows are reported (or fatal with --strict_parse)."""
        return self.checks.valid_rows(batch)

    def prepare_cached(self, batch: ParsedBatch) -> np.ndarray:
        return self.checks.prepare_cached(batch)  # rows of a batch read back from the cache

    @property
    def last_rows(self) -> np.ndarray:
        """The rows of the batch the last call answered for (the examples it used)."""
        return self.checks.last_rows

    @property
    def skipped(self) -> int:
        """Examples skipped so far: malformed, or with a label the learner cannot use."""
        return self.checks.skipped

    def latent_hashes(self, batch: ParsedBatch) -> np.ndarray:
        """:meth:`Configuration.latent_hashes`: the hashes dyadic kernels offset by class."""
        return self.config.latent_hashes(batch)

    def expand(self, batch: ParsedBatch, rows: np.ndarray, record_origin: bool = False):
        """Flatten examples to CSR ``(starts, slots, values[, origins])`` in chunks that fit."""
        capacity = max(1 << 16, 2 * int(batch.feat_hash.size) + 2 * rows.size)
        done = 0
        while done < rows.size:
            part = rows[done:]
            starts = np.empty(part.size + 1, np.int64)
            if self._scratch is None or self._scratch[0].size < capacity:
                # reused across batches: the output is consumed before the next call
                self._scratch = (np.empty(capacity, np.int64), np.empty(capacity, np.float64))
            slots, values = self._scratch
            origins = np.empty((capacity if record_origin else 1, 3), np.int64)
            count = self._expander()(part, batch.ex_int, batch.seg, batch.feat_hash,
                                     batch.feat_value, self.mask, self.ignore,
                                     not self.options.noconstant, self.interactions.array,
                                     self.interactions.width,
                                     self.options.leave_duplicate_interactions, starts, slots,
                                     values, origins, record_origin, self.slot_multiplier)
            if count <= 0:
                capacity = 4 * slots.size
                continue
            yield done, count, starts[:count + 1], slots, values, origins
            done += count

    def _expander(self):  # without interactions a kernel that does not compile their code
        return gd.expand_features if self.interactions.array.shape[0] else gd.expand_linear

    def learning_kernels(self) -> tuple:
        """The kernels that learn from parsed examples in this configuration: the feature
        expansion and the example loop of the reduction, the dyadic or the linear learner."""
        if self.reduction is not None:
            loops = self.reduction.kernels(self.dyadic is not None)
        elif self.dyadic is not None:
            loops = self.dyadic.kernels()
        else:
            loops = (self._linear_loop(),) if self.config.lrq is None else self.config.lrq.kernels()
        return (self._expander(), *loops)

    def _linear_loop(self):  # without --active a loop that does not compile the sampler's code
        return gd.learn_examples if self.active is not None else gd.learn_passive

    def run_kernel(self, batch: ParsedBatch, rows, holdout, training: bool):
        """The kernels' (predictions, raw scores, losses, features) of ``rows``, finite."""
        outputs = self._run_kernel(batch, rows, holdout, training)
        return check_finite(self.config, batch, rows, outputs)

    def _run_kernel(self, batch, rows, holdout, training):
        n = rows.shape[0]
        pred = np.empty(n)
        raw = np.empty(n)
        loss = np.empty(n)
        # VW counts an --ignore_linear namespace's features too; the kernels add theirs
        nfeat = interactions_mod.linear_ignored_counts(batch.ex_int, batch.seg, rows,
                                                       self.ignore)
        self.params[gd.P_TRAINING] = training
        self.requests = []  # label requests of this batch (active learning without --simulation)
        announce_compile(*self.learning_kernels())
        # a contiguous run of rows (always so from the cache) needs no gather
        picked = slice(int(rows[0]), int(rows[-1]) + 1) \
            if n and rows[-1] - rows[0] == n - 1 else rows
        labels = np.ascontiguousarray(batch.ex_float[picked, LABEL])
        if self.loss == LOGISTIC and self.reduction is None:
            labels = np.ascontiguousarray(self.checks.logistic_labels(labels))
        importances = np.ascontiguousarray(batch.ex_float[picked, WEIGHT])
        initials = np.ascontiguousarray(batch.ex_float[picked, INITIAL])
        labelled = (batch.ex_int[picked, NLABEL] > 0).view(np.uint8)
        if training:
            self.state[gd.T_SEEN] += float(importances.sum())
        if self.reduction is not None:
            return self._run_multiclass(batch, rows, holdout, importances, initials, pred, loss,
                                        nfeat)
        if self.dyadic is not None:
            for first, count, starts, slots, values, _ in self.expand(batch, rows):
                part = slice(first, first + count)
                nfeat[part] += np.diff(starts)
                self.ode_step_caps += self.dyadic.run(
                    self, batch, rows[part], starts, slots, values, labels[part],
                    importances[part], initials[part], labelled[part], holdout[part], pred[part],
                    loss[part])
            raw = pred.copy()
            if self.binary is not None:
                pred, loss = self._binary_report(batch, rows, pred, labels, labelled,
                                                 importances, loss)
            return self.scorer.report(pred), raw, loss, nfeat
        for first, count, starts, slots, values, _ in self.expand(batch, rows):
            part = slice(first, first + count)
            nfeat[part] += np.diff(starts)
            loop = self._linear_loop() if self.config.lrq is None else \
                self.config.lrq.loop(self, batch, rows[part])
            self.nan_predictions += loop(
                starts, slots, values, labels[part], importances[part], initials[part],
                labelled[part], holdout[part], self.weights, self.state, self.params,
                self.mask, pred[part], raw[part], loss[part], *self.active_arguments(count))
        if self.binary is not None:
            pred, loss = self._binary_report(batch, rows, pred, labels, labelled, importances,
                                             loss)
        return self.scorer.report(pred), raw, loss, nfeat

    def _binary_report(self, batch, rows, pred, labels, labelled, importances, loss):
        """--binary's signs and 0/1 losses; a label that is not ±1 is reported (VW 9.11.9: "The
        label '0' is not -1 or 1 as loss function expects.") and keeps its learner loss."""
        signs, loss, odd = self.binary.report(pred, labels, labelled.astype(bool), importances,
                                              loss)
        for k in np.flatnonzero(odd):
            self.log(f"[warning] {batch.source}:{batch.first_line + int(rows[k])}: label "
                     f"{labels[k]:g} is not -1 or 1 as --binary expects; its loss is the "
                     f"{self.loss_name} loss, as in VW")
        return signs, loss

    def active_arguments(self, count: int):
        """``(mode, sampler state, one uniform draw per example, mellowness, requests)`` for a
        kernel; ``requests`` receives the importance of each label to request (0: none)."""
        requests = np.zeros(count)
        self.requests.append(requests)
        if self.active is None or not (self.params[gd.P_TRAINING] or self.active.requests_labels):
            return 0, np.zeros(1), np.zeros(1), 1.0, requests  # -t still requests labels (VW)
        return (self.active.mode, self.active.sampler, self.active.uniforms(count),
                self.active.mellowness, requests)

    def _run_multiclass(self, batch, rows, holdout, importances, initials, pred, loss, nfeat):
        if batch.classes is None:
            self.checks.multiclass_rows(batch, rows, report=False)
        classes = batch.classes[rows]
        # a label out of range is never predicted right; --oaa learns it as no class's
        # example (VW), the trees predict it without learning (VW's --ect)
        strange = np.zeros(rows.size, bool) if batch.out_of_range is None else \
            batch.out_of_range[rows]
        learned = classes
        if self.reduction.out_of_range == "predict" and strange.any():
            learned = np.where(strange, UNLABELLED, classes)
        predicted = np.empty(rows.size, dtype=np.int64)
        o = self.options
        scores = np.empty((rows.size, self.reduction.classes)) \
            if o.scores or o.probabilities or self.want_scores or self.raw_scores else None
        for first, count, starts, slots, values, _ in self.expand(batch, rows):
            part = slice(first, first + count)
            nfeat[part] += np.diff(starts)
            self.reduction.run(self, starts, slots, values, learned[part], importances[part],
                               initials[part], holdout[part], predicted[part],
                               None if scores is None else scores[part], batch=batch,
                               rows=rows[part])
        pred[:] = predicted
        loss[:] = np.where((classes >= 0) & ((predicted != classes) | strange), importances, 0.0)
        if o.probabilities and not self.want_scores:
            scores = logistic(scores)
            scores /= scores.sum(axis=1, keepdims=True)
            known = (classes >= 0) & (holdout == 0) & ~strange
            truth = scores[np.flatnonzero(known), classes[known]]
            self.multiclass_log_loss[0] -= float((importances[known] * np.log(truth)).sum())
            self.multiclass_log_loss[1] += float(importances[known].sum())
        return pred, (pred.copy() if scores is None else scores), loss, nfeat

    def _as_batch(self, examples) -> ParsedBatch:
        return examples if isinstance(examples, ParsedBatch) else self.parse(examples)

    def repeat_pass(self) -> None:
        """The examples from now on repeat ones already learned (a later pass): the dyadic
        learner stops counting the uses of its latent rows, which size its default penalty,
        and its latent rate takes one more step of ``--dyad_decay``."""
        self.params[gd.P_DYAD_COUNT] = 0.0
        if self.config.lrq is not None:
            self.config.lrq.next_pass()
        if self.dyadic is not None:
            self.set_latent_scale(self.latent_scale * self.dyadic.settings["decay"])

    def set_latent_scale(self, scale: float) -> None:
        """Learn latent vectors at ``scale`` × ``--dyad_rate``, at least its lower bound."""
        self.latent_scale = max(float(scale), lowest_latent_scale(self.dyadic.settings["rate"]))
        self.params[gd.P_LATENT_RATE] = self.dyadic.settings["rate"] * self.latent_scale

    def learn(self, examples) -> np.ndarray:
        """Learn from VW lines (a string, a list of strings) or a parsed batch, in order.

        Returns the progressive predictions (each made before its own update), one per example
        used: a malformed line is skipped with a warning, so ``last_rows`` says which rows of
        the batch (lines, in order) the outputs belong to.
        """
        batch = self._as_batch(examples)
        rows = self.valid_rows(batch)
        pred, _, _, _ = self.run_kernel(batch, rows, np.zeros(rows.size, np.uint8), self.training)
        return pred

    def predict(self, examples):
        """Predictions for VW lines or a parsed batch, one per example used (``last_rows``: their
        rows); the model is not changed.  One line (a string without a newline) gives one
        number, as pyvw's ``predict`` does.  A multiclass model predicts classes as the data
        writes them and VW prints them: 1..K (0..K-1 under 0-based labels), or the names of
        --named_labels (:meth:`predict_with_scores` gives class indices 0..K-1)."""
        predictions = self.predict_with_scores(examples)[0]
        if self.reduction is not None:
            predictions = self.reduction.class_labels(predictions)
        if one_line(examples, predictions):
            first = predictions[0]
            return float(first) if self.reduction is None else \
                first if isinstance(first, str) else int(first)
        return predictions

    def predict_with_scores(self, examples) -> tuple[np.ndarray, np.ndarray]:
        """Predictions and the raw scores behind them (for a multiclass reduction, the class
        scores of --oaa/--sft as an (n, K) array); the model is not changed."""
        batch = self._as_batch(examples)
        rows = self.valid_rows(batch)
        saved_state = self.state.copy()
        saved_sampler = None if self.active is None else \
            (self.active.sampler.copy(), self.active.rng.bit_generator.state)
        self.want_scores = self.reduction is not None and self.reduction.name != "ect"
        try:
            pred, raw, _, _ = self.run_kernel(batch, rows, np.ones(rows.size, np.uint8), False)
        finally:
            self.want_scores = False
            self.state[:] = saved_state
            if saved_sampler is not None:  # label requests count what they see; a look does not
                self.active.sampler[:] = saved_sampler[0]
                self.active.rng.bit_generator.state = saved_sampler[1]
        return pred, raw

    def h_min(self, examples, target: float = 0.0, label: float | None = None):
        """The smallest importance weight whose update would move each example's prediction to
        ``target`` with label ``label`` (SPEC §C); by default the reverting weight: the weight
        that flips the prediction (label opposite to it, target 0).  ``inf`` when unreachable.
        Binary learners (linear or ``--dyad``), and ``--sft``: there the reverting weight of
        SPEC §C.3, the smallest that makes the predicted class lose a match.  One line gives
        one number, as :meth:`predict` does; several give an array.  With the default adaptive
        and normalized rates the per-feature state is taken as it stands (VW's sensitivity at
        importance 1, SPEC erratum 2): a real update of weight h also grows that state, so
        learning the example at exactly this weight can stop a few percent short of the flip."""
        weights = self.h_min_array(examples, target, label)
        return float(weights[0]) if one_line(examples, weights) else weights

    def h_min_array(self, examples, target: float = 0.0,
                    label: float | None = None) -> np.ndarray:
        """:meth:`h_min` as an array whatever it was given."""
        tree = self.reduction is not None and self.reduction.name == "sft"
        if (self.reduction is not None and not tree) or self.config.lrq is not None:
            raise ValueError("h_min is for binary learners and --sft (not --oaa, --ect or --lrq)")
        if tree and (target != 0.0 or label is not None):
            raise ValueError("under --sft, h_min is the reverting weight: no target or label")
        if self.params[gd.P_DYAD_DROPOUT]:
            raise ValueError("h_min assumes the model it predicts with learns; under "
                             "--lrqdropout an update moves a random half of it")
        batch = self._as_batch(examples)
        rows = self.valid_rows(batch)
        out = np.empty(rows.size)
        if tree:
            initials = np.ascontiguousarray(batch.ex_float[rows, INITIAL])
            for first, count, starts, slots, values, _ in self.expand(batch, rows):
                part = slice(first, first + count)
                self.reduction.reverting_weights(self, batch, rows[part], starts, slots, values,
                                                 initials[part], out[part])
            return out
        targets = np.full(rows.size, float(target))
        labels = np.full(rows.size, 0.0 if label is None else float(label))
        initials = np.ascontiguousarray(batch.ex_float[rows, INITIAL])
        for first, count, starts, slots, values, _ in self.expand(batch, rows):
            part = slice(first, first + count)
            if self.dyadic is not None:
                d = self.dyadic
                dyadic_hmin_examples(rows[part], batch.ex_int, batch.seg, self.latent_hashes(batch),
                                     batch.feat_value, self.ignore, starts, slots, values,
                                     initials[part], targets[part], labels[part], d.pairs,
                                     d.rank, d.shift, self.weights, self.state, self.params,
                                     self.mask, out[part])
            else:
                gd.hmin_examples(starts, slots, values, initials[part], targets[part],
                                 labels[part], self.weights, self.state, self.params, self.mask,
                                 out[part])
        return out

    @contextlib.contextmanager
    def synced_weights(self):
        """The weights with ``--l1``/``--l2``'s pending truncation and contraction folded in,
        for writing a model; learning then goes on from the unfolded state, as in VW, where
        a weight truncated to 0 keeps its stored value until the run ends (a mid-run save
        must not change the run)."""
        if self.params[gd.P_GRAVITY] == 0.0 and self.params[gd.P_CONTRACTION] == 1.0:
            yield
            return
        weights, params = self.weights[:, gd.W].copy(), self.params.copy()
        gd.sync_weights(self.weights, self.params)
        try:
            yield
        finally:
            self.weights[:, gd.W] = weights
            self.params[:] = params
