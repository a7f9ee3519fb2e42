"""``Workspace``: builds the learner from options and drives passes over data.

The same object serves the command line (``run``) and Python (``learn``/``predict``/``save``)::

    >>> from pyvw_lite import Workspace
    >>> ws = Workspace("--loss_function logistic -b 20 --quiet")
    >>> _ = ws.learn(["1 |rater r_1 |task t_9", "-1 |rater r_2 |task t_9"])
    >>> ws.predict("|rater r_1 |task t_9") > 0
    True
"""
from __future__ import annotations

import contextlib
import math
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator, Sequence, TextIO

import numpy as np

from ._version import __version__
from .io.atomic import atomic_write
from .io.hashing import CONSTANT_HASH
from .io.model_io import ModelData, ModelError, load_model, save_model, text_header
from .io.vw_text import (ERR_CODE, ERR_NEGATIVE_IMPORTANCE, INITIAL, LABEL, MALFORMED, NLABEL, OK,
                         STATUS, TAG_END, TAG_START, WEIGHT, ParsedBatch, describe_error,
                         parse_buffer, split_lines)
from .jit import announce_compile
from .learners import gd
from .learners.dyadic import RK4, TAYLOR
from .learners.losses import HINGE, LOGISTIC, LOSS_CODES, QUANTILE
from .options import (BY_NAME, FLAG, LIST, UPDATE_FLAGS, OptionError, Options, options_from,
                      _convert as _convert_option,
                      parse_argv)
from .reductions import interactions as interactions_mod


class ParseError(ValueError):
    """A malformed example under ``--strict_parse`` (the message names file, line and text)."""


def format_prediction(value: float) -> str:
    """VW's prediction text: an integral value without decimals, else six decimals."""
    if math.isfinite(value) and value == math.floor(value):
        return f"{value:.0f}"
    return f"{value:.6f}"


def _prefetch(iterator: Iterator, enabled: bool = True) -> Iterator:
    """Produce the next item in a background thread while the caller works on this one.

    The parser and learner kernels release the GIL, so parsing overlaps learning on two cores.
    """
    if not enabled:
        yield from iterator
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(next, iterator, None)
        while True:
            item = future.result()
            if item is None:
                return
            future = pool.submit(next, iterator, None)
            yield item


def _shown(opt, value) -> str:
    """An option's value as an error shows it: ``with --rank 1``, ``without --oaa``."""
    if not value and (opt.kind == FLAG or value == opt.default):
        return f"without --{opt.name}"
    if opt.kind == FLAG:
        return f"with --{opt.name}"
    if opt.kind == LIST:
        return "with " + " ".join(f"--{opt.name} {item}" for item in value)
    return f"with --{opt.name} {value!r}"


def _model_option(opt) -> bool:
    """Whether a model file may set this option: the ones that define a model (``keep``) and
    VW's learning-rate options (``resume``).  Outputs, inputs, ``--executor`` and every other
    run-time option come from the command line only (docs/security.md)."""
    return opt.keep or opt.resume


def _stored_options(path: str, argv) -> Options:
    """The options a model's header stores, each one a model may set, or a ModelError."""
    try:
        stored = parse_argv(argv)
    except OptionError as exc:
        raise ModelError(f"{path}: malformed model header ({exc})") from None
    for name in sorted(stored.given):
        if not _model_option(BY_NAME[name]):
            raise ModelError(f"{path}: the model's header sets --{name}, which a model may not "
                             "set (a model keeps only the options that define it; give run "
                             "options on the command line)")
    return stored


def _stored_kept(path: str, kept) -> dict:
    """A model's layout values (``state["kept"]``), checked: layout options only, each of its
    option's type, converted as the command line converts it."""
    if not isinstance(kept, dict):
        raise ModelError(f"{path}: malformed model header (kept options are not a table)")
    checked = {}
    for name, value in kept.items():
        opt = BY_NAME.get(name)
        if opt is None or not opt.layout:
            raise ModelError(f"{path}: the model's header sets --{name}, which a model may not "
                             "set")
        if opt.kind == FLAG:
            if not isinstance(value, bool):
                raise ModelError(f"{path}: malformed model header (--{name} = {value!r:.40})")
            checked[name] = value
            continue
        values = value if opt.kind == LIST else [value]
        if not isinstance(values, list) \
                or any(isinstance(v, (dict, list, bool)) for v in values):
            raise ModelError(f"{path}: malformed model header (--{name} = {value!r:.40})")
        if value is None and opt.default is None:
            checked[name] = None
            continue
        try:
            converted = [_convert_option(opt, str(v)) for v in values]
        except OptionError as exc:
            raise ModelError(f"{path}: malformed model header ({exc})") from None
        checked[name] = converted if opt.kind == LIST else converted[0]
    return checked


def _number(value, infinite: bool = False) -> bool:
    """An int or float, finite unless ``infinite``, never NaN: a NaN or infinite rate or sum
    loads a model that never learns."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and not math.isnan(value) and (infinite or math.isfinite(value))


def _check_learner_model(path: str, model: ModelData) -> None:
    """Every state field and array of a learner's model is of the kind a model writes."""
    state, arrays = model.state, model.arrays
    integers = ("stride", "class_stride", "latent_columns")
    problems = [name for name in integers
                if name in state and not (isinstance(state[name], int)
                                          and not isinstance(state[name], bool)
                                          and 0 <= state[name] <= 1 << 16)]
    learner = state.get("learner")
    unbounded = (gd.MIN_LABEL, gd.MAX_LABEL)  # the label range starts at --min/max_prediction
    # sums and counts are never negative (a negative normalizer sum divided by zero in the
    # kernel); only the label range may be negative or infinite
    if not isinstance(learner, list) or not all(
            _number(v) and v >= 0 or i in unbounded and _number(v, infinite=True)
            for i, v in enumerate(learner)):
        problems.append("learner")
    if not isinstance(state.get("stride"), int):
        problems.append("stride")
    for name in ("power_t",):
        if name in state and not _number(state[name]):
            problems.append(name)
    multiplier = state.get("slot_multiplier", 1)
    if not (isinstance(multiplier, int) and not isinstance(multiplier, bool)
            and 0 <= multiplier < 1 << 32):
        problems.append("slot_multiplier")
    if "predict_only" in state and not isinstance(state["predict_only"], bool):
        problems.append("predict_only")
    if "sampler" in state and not (isinstance(state["sampler"], list)
                                   and all(_number(v) for v in state["sampler"])):
        problems.append("sampler")
    rows, values = arrays.get("rows"), arrays.get("values")
    if rows is None or rows.ndim != 1 or rows.dtype.kind not in "iu":
        problems.append("rows")
    if values is None or values.ndim != 2 or values.dtype.kind != "f" \
            or rows is not None and values.shape[0] != rows.shape[0] \
            or values.shape[1] < 1 + int(state.get("latent_columns", 0) or 0):
        problems.append("values")
    # checked as the stored integers, before any cast: a uint64 index of 2^63 or more wraps
    # to a negative int64, which would pass a bound check and index from the top
    if rows is not None and rows.size and rows.dtype.kind in "iu" \
            and not 0 <= int(rows.min()) <= int(rows.max()) < 1 << 32:
        problems.append("rows")
    if values is not None and values.dtype.kind == "f" and values.size and not (
            np.isfinite(values).all() and np.abs(values).max() <= np.finfo(np.float32).max):
        problems.append("values")  # the weight table is float32: 1e200 would become inf
    if "touched" in arrays and (arrays["touched"].ndim != 1 or arrays["touched"].dtype != np.uint8):
        problems.append("touched")
    if problems:
        raise ModelError(f"{path}: malformed model ({', '.join(sorted(set(problems)))} not as a "
                         "model writes them)")


def _earlier_dyad_defaults(stored: Options) -> dict:
    """A dyadic model saved before the plain form became the default: the form and latent
    schedule it was trained with (shifted unless --dyad_plain; rate 1/(2k), or 1 for the plain
    form; noise 0.01; no L2; the --power_t decay), for the values it did not store."""
    values = {"dyad_shifted": not stored.dyad_plain, "dyad_noise": 0.01, "dyad_l2": 0.0,
              "dyad_power_t": stored.power_t}
    if stored.dyad_plain or stored.dyad_plain_rate:
        values["dyad_rate"] = 1.0
    return {name: value for name, value in values.items() if name not in stored.given}


def _one_line(examples, results: np.ndarray) -> bool:
    """Whether a call was given one line (a string without a line break) and has its one
    result: then predict and h_min answer with a number, as pyvw's predict does."""
    return isinstance(examples, str) and "\n" not in examples.strip() and results.size == 1


class Workspace:
    """A learner configured by VW options; see the module docstring."""

    def __init__(self, args: str | Sequence[str] | None = None, *, arg_str: str | None = None,
                 stdout: TextIO | None = None, stderr: TextIO | None = None, **keywords):
        if arg_str is not None:  # pyvw's name of the command line
            if args is not None:
                raise TypeError("give the command line once: args or arg_str")
            args = arg_str
        options = options_from(args, **keywords)
        self.model: ModelData | None = None
        if options.initial_regressor:
            self.model = load_model(options.initial_regressor)
            if self.model.state.get("kind") == "crowd":
                raise ModelError(f"{options.initial_regressor}: a crowd model (from `pyvw-lite "
                                 "crowd`); continue it with `pyvw-lite crowd -i`")
            _check_learner_model(options.initial_regressor, self.model)
            options = self._merge_model_options(options, self.model)
        self.options = options
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr
        self.quiet = bool(options.quiet)
        self.log_lines: list[str] = []
        self._configure()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, kind, error, trace) -> None:
        """As pyvw's: ``with Workspace(...) as ws`` calls :meth:`finish` at the end of the block
        (not after an exception: a half-learned model is not saved over a good one)."""
        if kind is None:
            self.finish()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["stdout"] = state["stderr"] = None  # streams do not pickle
        state["_scratch"] = None
        return state

    def __setstate__(self, state):
        # unpickled arrays may be read-only (memory maps); kernels want writable ones, and a
        # read-only array would even compile a second kernel variant
        for name, value in state.items():
            if isinstance(value, np.ndarray) and not value.flags.writeable:
                state[name] = value.copy()
        self.__dict__.update(state)
        self.stdout, self.stderr = sys.stdout, sys.stderr
        self.interactions = interactions_mod.setup(self.options)
        if self.reduction is not None and hasattr(self.reduction, "tree"):
            from .reductions.tree import bracket
            self.reduction.tree = bracket(self.reduction.classes)

    # ------------------------------------------------------------------ configuration
    @staticmethod
    def _merge_model_options(options: Options, model: ModelData) -> Options:
        """Options stored in a model are re-applied; a conflicting command-line value is an error.

        A model keeps the value of every layout option (``state["kept"]``), defaults included;
        other kept options, and every option of older models, only when they were given.
        The learning-rate options a model was trained with (VW's too: ``-l``, ``--power_t`` and
        the update flags) are its defaults: the command line may change them."""
        path = options.initial_regressor
        stored = _stored_options(path, model.options)
        kept = _stored_kept(path, model.state.get("kept", {}))
        for name in stored.given:
            kept.setdefault(name, getattr(stored, name))
        if kept.get("dyad") and "dyad_shifted" not in kept:
            kept.update(_earlier_dyad_defaults(stored))
        merged = options.as_dict()
        given = set(options.given)
        flags_given = any(name in given for name in UPDATE_FLAGS)
        for name, value in kept.items():
            opt = BY_NAME[name]
            if opt.resume:
                if name not in given and not (name in UPDATE_FLAGS and flags_given):
                    merged[name] = value
                    given.add(name)
                continue
            if opt.kind == LIST:
                value = tuple(value)
            current = getattr(options, name)
            if name in options.given and (tuple(current) if opt.kind == LIST else current) != value:
                raise OptionError(f"{options.initial_regressor}: the model was trained "
                                  f"{_shown(opt, value)}, not {_shown(opt, current)} (its "
                                  f"options: {' '.join(model.options) or 'the defaults'})")
            merged[name] = value
            if name in stored.given or value != opt.default:
                given.add(name)
        return Options(merged, given)

    def _configure(self) -> None:
        o = self.options
        if not 1 <= o.bit_precision <= 32:
            raise OptionError(f"option '--bit_precision': {o.bit_precision} is out of range 1..32")
        if o.passes < 1:
            raise OptionError(f"option '--passes': {o.passes} must be at least 1")
        if o.holdout_period < 1:
            raise OptionError(f"option '--holdout_period': {o.holdout_period} must be at least 1")
        for name in ("holdout_after", "early_terminate"):  # VW would wrap -1 to 2^64 - 1
            if getattr(o, name) < 0:
                raise OptionError(f"option '--{name}': {getattr(o, name)} must be at least 0")
        if not (math.isfinite(o.logistic_min) and math.isfinite(o.logistic_max)
                and o.logistic_min < o.logistic_max):
            raise OptionError(f"options '--logistic_min {o.logistic_min:g} --logistic_max "
                              f"{o.logistic_max:g}': need finite values, the first below the "
                              "second")
        if o.save_per_pass and not o.final_regressor:  # VW saves nothing then, silently
            raise OptionError("--save_per_pass saves the -f model after each pass (FILE.1, "
                              "FILE.2, ...): give -f FILE")
        if o.examples is not None and o.examples < 0:
            raise OptionError(f"option '--examples': {o.examples} must be at least 0")
        if o.min_prediction is not None and o.max_prediction is not None \
                and o.min_prediction > o.max_prediction:
            raise OptionError(f"option '--min_prediction': {o.min_prediction:g} is above "
                              f"--max_prediction {o.max_prediction:g}")
        self.bits = o.bit_precision
        self.mask = (1 << self.bits) - 1
        self.loss_name = o.loss_function
        self.loss = LOSS_CODES[self.loss_name]
        if not 0.0 < o.quantile_tau < 1.0:
            raise OptionError(f"option '--quantile_tau': {o.quantile_tau:g} must be between 0 "
                              "and 1 (0.5 aims at the median)")
        chosen = {name for name in UPDATE_FLAGS if name in o.given}
        from .reductions import dyad
        self.dyadic = dyad.setup(o)
        if self.dyadic is not None:
            if (o.adaptive or o.normalized) and o.dyad_plain_rate:
                raise OptionError("--dyad_plain_rate moves every parameter at the plain rate; "
                                  "--adaptive and --normalized do not apply")
            self.adaptive = self.normalized = False
            self.invariant = True
        elif chosen:
            self.adaptive = bool(o.adaptive)
            self.normalized = bool(o.normalized)
            self.invariant = bool(o.invariant)
        else:
            self.adaptive = self.normalized = self.invariant = True
        eta = o.learning_rate
        initial_t = o.initial_t
        # the dyadic learner's linear terms take adaptive per-feature rates unless told otherwise
        # (their squared gradients live in column G); then -l keeps VW's adaptive default
        dyadic_adaptive = bool(o.dyad) and not o.dyad_plain_rate
        if not initial_t >= 0.0 and (not self.adaptive or o.dyad):  # VW: NaN updates
            raise OptionError(f"option '--initial_t': {initial_t:g} must be at least 0 (the "
                              "learning rate decays as (initial_t + t)^-power_t)")
        if (not (self.adaptive and self.normalized) and not dyadic_adaptive
                and "learning_rate" not in o.given):
            eta = 10.0
        if not self.adaptive and not self.normalized:
            if "initial_t" not in o.given:
                initial_t = 1.0
            eta *= initial_t ** o.power_t
        self.eta = eta
        self.stride = 4 if (self.adaptive or self.normalized or dyadic_adaptive) else 1
        self.interactions = interactions_mod.setup(o)
        self.ignore = interactions_mod.namespace_mask(o)
        self.hash_all = o.hash == "all"
        self.training = not o.testonly
        self.reduction = self._multiclass_reduction(o)
        from .reductions import binary, scorer
        self.scorer = scorer.setup(o)
        self.binary = binary.setup(o)
        if self.binary is not None and self.reduction is not None:
            raise OptionError("--binary is for binary labels; it cannot go with a multiclass "
                              "reduction")
        if (o.scores or o.probabilities) and (self.reduction is None
                                              or self.reduction.name == "ect"):
            raise OptionError("--scores and --probabilities need --oaa or --sft")
        if o.probabilities and self.loss_name != "logistic":  # as VW warns
            self._log("[warning] --probabilities should be used only with "
                      f"--loss_function=logistic, currently using: {self.loss_name}")
        self.multiclass_log_loss = [0.0, 0.0]  # Σ -h·log p(true class), Σ h
        from .reductions import active
        self.active = active.setup(o)
        if self.active is not None and self.loss == QUANTILE:
            raise OptionError("--active is defined for the squared, logistic and hinge losses "
                              "(SPEC §C); the quantile loss has no h_min here")
        if o.l1 or o.l2:
            self._check_regularization(o)
        if self.active is not None and o.lrqdropout and o.dyad:
            raise OptionError("--active's h_min assumes the model it predicts with learns; "
                              "--lrqdropout learns a random half of it, so they cannot go "
                              "together")
        if self.active is not None and self.reduction is not None and \
                self.reduction.name != "sft":  # SPEC §C.3 defines no sampler for --oaa, --ect
            raise OptionError("--active needs a binary learner or --sft (SPEC §C.3 defines no "
                              "sampler for --oaa and --ect)")
        self.models = self.reduction.models if self.reduction is not None else 1
        if self.dyadic is not None and self.reduction is not None and \
                self.reduction.name == "ect":
            raise OptionError("--dyad goes with binary learning, --oaa or --sft (not --ect)")
        self.touched = np.zeros(1 << self.bits if self.dyadic is not None else 1, dtype=np.uint8)
        # a dyadic feature's latent vector: the last k columns of its linear weight's row
        self.latent = self.dyadic.rank if self.dyadic is not None else 0
        self.ode_step_caps = 0
        if self.model is not None:
            try:
                self._restore(self.model, initial_t)
            except (ModelError, OptionError):
                raise
            except (ValueError, IndexError, TypeError, KeyError) as exc:  # shapes, sizes
                raise ModelError(f"{o.initial_regressor}: malformed model ({exc})") from None
        else:
            self.weights = self._empty_table()
            self.state = np.zeros(gd.state_size(self.models), dtype=np.float64)
            self._start_learning_state(initial_t)
            if not o.noconstant and o.constant:
                placed = self._slot_multiplier(o)
                if placed != gd.HASH_MIX:  # VW's place for the binary layout (and --vw_layout)
                    placed = 1
                self.weights[int(gd.place_array(CONSTANT_HASH, placed, self.mask)), gd.W] = \
                    o.constant
            if self.loss == LOGISTIC:
                self.state[gd.MIN_LABEL], self.state[gd.MAX_LABEL] = -50.0, 50.0
        self.initial_t_shown = float(self.state[gd.T_SEEN]) if self.model is not None else initial_t
        fixed = o.min_prediction is not None or o.max_prediction is not None
        if o.min_prediction is not None:
            self.state[gd.MIN_LABEL] = o.min_prediction
        if o.max_prediction is not None:
            self.state[gd.MAX_LABEL] = o.max_prediction
        self.params = np.zeros(gd.PARAM_SIZE, dtype=np.float64)
        self.params[gd.P_ETA] = self.eta
        self.params[gd.P_POWER_T] = o.power_t
        self.params[gd.P_LOSS] = self.loss
        self.params[gd.P_ADAPTIVE] = self.adaptive
        self.params[gd.P_NORMALIZED] = self.normalized
        self.params[gd.P_INVARIANT] = self.invariant
        self.params[gd.P_TRAINING] = self.training
        self.params[gd.P_CONSTANT] = not o.noconstant
        self.params[gd.P_FIXED_RANGE] = fixed
        self.params[gd.P_DYAD_ADAPTIVE] = not o.dyad_plain_rate
        self.params[gd.P_ODE_SOLVER] = TAYLOR if o.ode_solver == "taylor" else RK4
        settings = self.dyadic.settings if self.dyadic is not None else None
        self.params[gd.P_LATENT_RATE] = settings["rate"] if settings else 1.0
        self.params[gd.P_DYAD_POWER_T] = settings["power_t"] if settings else o.power_t
        self.params[gd.P_DYAD_SEED] = o.dyad_seed & 0xFFFFFFFF
        self.params[gd.P_DYAD_L2] = settings["l2"] if settings else 0.0
        self.params[gd.P_DYAD_L2_POWER] = settings["l2_power"] if settings else 0.0
        # --lrqdropout drops latent coordinates of binary and regression updates (VW's lrq)
        self.params[gd.P_DYAD_DROPOUT] = bool(settings and settings["dropout"])
        self.params[gd.P_DYAD_COUNT] = 1.0  # off once the data repeats: repeat_pass()
        self.params[gd.P_TAU] = o.quantile_tau
        self.params[gd.P_L1] = o.l1
        self.params[gd.P_L2] = o.l2
        self.params[gd.P_CONTRACTION] = 1.0
        if self.dyadic is not None:  # the linear terms' rates: adaptive and normalized, as VW's
            self.params[gd.P_NORMALIZED] = not o.dyad_plain_rate
        self.slot_multiplier = self._slot_multiplier(o)
        # models saved before the contiguous class layout keep the spread one they learned with
        self.params[gd.P_CLASS_STRIDE] = gd.CLASS_STRIDE if self.model is None else \
            self.model.state.get("class_stride", gd.LEGACY_CLASS_STRIDE)
        if self.params[gd.P_CLASS_STRIDE] not in (gd.CLASS_STRIDE, gd.LEGACY_CLASS_STRIDE):
            raise ModelError(f"{o.initial_regressor}: malformed model (class stride "
                             f"{self.params[gd.P_CLASS_STRIDE]:g})")
        self.nan_predictions = 0
        self._scratch = None
        self._want_scores = False
        self.raw_scores = False  # class scores for -r (--oaa/--sft without --scores)
        self.requests = []
        self.skipped = 0
        self.told_soft_zero = False  # the note on logistic label 0 is given once
        self.last_rows = np.zeros(0, np.int64)

    def _slot_multiplier(self, o: Options) -> int:
        """How feature hashes are placed in the weight table (``gd.place``): multiplied by W of
        VW's layout with --vw_layout, mixed (``gd.HASH_MIX``) for other multiclass and for
        --dyad models, as they are for a binary linear model (1).  A loaded model: what it
        records, 1 if nothing."""
        if o.vw_layout:
            return self._vw_layout_width(o)
        if self.model is not None:
            return int(self.model.state.get("slot_multiplier", 1))
        multiclass = self.reduction is not None and self.reduction.models > 1
        return gd.HASH_MIX if multiclass or self.dyadic is not None else 1

    def latent_hashes(self, batch) -> np.ndarray:
        """The feature hashes the dyadic kernels add class offsets to: ``batch.feat_hash``
        placed as the linear weights' (``gd.place``), so that a latent vector stays in its
        linear weight's row."""
        if self.slot_multiplier == 1:
            return batch.feat_hash
        return gd.place_array(batch.feat_hash, self.slot_multiplier,
                              self.mask).astype(batch.feat_hash.dtype)

    def _vw_layout_width(self, o: Options) -> int:
        """W of VW's layout: the power of two that holds every sub-model of --oaa K (K) or
        --ect K (K - 1) (VW_FACTS §2)."""
        name = self.reduction.name if self.reduction is not None else None
        if name not in (None, "oaa", "ect") or self.dyadic is not None:
            raise OptionError("--vw_layout reproduces VW's placement for --oaa, --ect and binary "
                              "linear learners (not --sft or --dyad)")
        models = self.reduction.models if self.reduction is not None else 1
        width = 1
        while width < models:
            width *= 2
        return width

    @staticmethod
    def _multiclass_reduction(o: Options):
        from .reductions import ect, oaa, sft
        found = [r for r in (oaa.setup(o), ect.setup(o), sft.setup(o)) if r is not None]
        if len(found) > 1:
            raise OptionError("give one multiclass reduction: --oaa, --ect (--ft) or --sft")
        if not found and (o.named_labels or o.indexing is not None):
            raise OptionError("--named_labels and --indexing need --oaa, --ect or --sft")
        return found[0] if found else None

    def _start_learning_state(self, initial_t: float) -> None:
        """The learner's state before its first example, as VW starts it: ``t`` (and sub-model
        0's normalizer sums) at ``initial_t``, every adaptive sum at ``initial_t``."""
        if self.adaptive and initial_t > 0:
            self.weights[:, gd.G] = initial_t
        self.state[gd.T_SUM] = self.state[gd.T_SEEN] = initial_t
        if self.normalized and initial_t > 0:  # VW starts sub-model 0's sums at initial_t
            self.state[gd.NORM_BASE] = self.state[gd.NORM_BASE + 1] = initial_t

    def _restore(self, model: ModelData, initial_t: float) -> None:
        """Load ``model``; one saved without its learning state (--predict_only_model) goes on
        learning from a fresh state, as in VW."""
        state = model.state
        if state.get("stride") != self.stride and self.training and not state.get("predict_only"):
            self._log(f"[info] {self.options.initial_regressor} was trained with other update "
                      "flags (--sgd/--adaptive/--normalized): its per-feature accumulators are "
                      "not used")
        self.weights = self._empty_table()
        rows = model.arrays["rows"].astype(np.int64)
        values = model.arrays["values"]
        if rows.size and rows.max() > self.mask:
            raise ModelError(f"{self.options.initial_regressor}: weight index out of range "
                             f"for -b {self.bits} (corrupt model)")
        linear = values.shape[1] - int(state.get("latent_columns", 0))
        columns = min(linear, self.stride if self.stride == 1 else 3)
        if state.get("stride") != self.stride:
            columns = 1
        self.weights[rows, :columns] = values[:, :columns]
        if self.latent:
            if state.get("latent_columns") != self.latent:
                raise ModelError(f"{self.options.initial_regressor}: a dyadic model saved by "
                                 "an older pyvw-lite (latent vectors in rows of their own); "
                                 "retrain it with this version")
            self.weights[rows, -self.latent:] = values[:, -self.latent:]
        if "touched" in model.arrays and self.dyadic is not None:
            self.touched[:] = np.unpackbits(model.arrays["touched"])[:self.touched.size]
        self.state = np.asarray(state["learner"], dtype=np.float64).copy()
        if self.state.shape[0] == gd.state_size(self.models) - 2:
            # saved before the latent counts: its touched rows at the reference uses, so the
            # default penalty resumes where it was
            rows = float(np.count_nonzero(self.touched)) if self.dyadic is not None else 0.0
            self.state = np.append(self.state, [rows, rows * gd.L2_REFERENCE_USES])
        if "power_t" in state and "power_t" not in self.options.given:
            self.options.power_t = state["power_t"]  # VW keeps the decay with the resume state
        if self.state.shape[0] != gd.state_size(self.models):
            raise ModelError(f"{self.options.initial_regressor}: incompatible learner state")
        if state.get("predict_only"):
            self._start_learning_state(initial_t)
        if self.active is not None and "sampler" in state:
            self.active.resume(state["sampler"])

    def _empty_table(self) -> np.ndarray:
        """The zero weight table: ``stride`` linear columns, then the latent ones."""
        return np.zeros((1 << self.bits, self.stride + self.latent), dtype=np.float32)

    @property
    def _latent_columns(self) -> list[int]:
        """The weight table's latent columns (none without --dyad)."""
        return list(range(self.stride, self.stride + self.latent))

    # ------------------------------------------------------------------ parsing
    def parse(self, lines: str | bytes | Iterable[str | bytes], *, record_spans: bool = False,
              source: str = "<input>") -> ParsedBatch:
        """Parse VW text lines (one string, or an iterable of lines) into a batch."""
        if isinstance(lines, (str, bytes)):
            lines = [lines]
        data = b"\n".join(line.encode("utf-8") if isinstance(line, str) else line for line in lines)
        buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
        starts, ends, _ = split_lines(buf, final=True)
        if not data:
            starts = ends = np.zeros(1, np.int64)
        return self._parse_chunk(buf, starts, ends, 1, source, record_spans)

    def _parse_chunk(self, buf, starts, ends, first_line, source, record_spans=False) -> ParsedBatch:
        numeric = self.reduction is None or self.reduction.parse_label_number
        return parse_buffer(buf, starts, ends, hash_seed=self.options.hash_seed,
                            hash_all=self.hash_all, parse_label_number=numeric,
                            record_spans=record_spans, first_line=first_line, source=source)

    # ------------------------------------------------------------------ example checks
    def _log(self, text: str) -> None:
        if not self.quiet:
            self.stdout.write(text + "\n")

    def _valid_rows(self, batch: ParsedBatch) -> np.ndarray:
        """Rows to learn from; malformed rows are reported (or fatal with --strict_parse).
        ``last_rows`` keeps them: which of its examples the last call answered for."""
        self.last_rows = self._checked_rows(batch)
        return self.last_rows

    def _checked_rows(self, batch: ParsedBatch) -> np.ndarray:
        status = batch.ex_int[:, STATUS]
        bad = np.flatnonzero(status == MALFORMED)
        for row in bad:
            message = describe_error(batch, int(row))
            if self.options.strict_parse:
                raise ParseError(message)
            self._log(f"[warning] {message}; example skipped")
        self.skipped += bad.size
        rows = np.flatnonzero(status == OK)
        for row in rows[batch.ex_int[rows, ERR_CODE] == ERR_NEGATIVE_IMPORTANCE]:
            self._predict_only(batch, int(row), describe_error(batch, int(row)))
            batch.ex_int[row, ERR_CODE] = 0  # reported once, also when the batch is cached
        if self.reduction is not None:
            return self._multiclass_rows(batch, rows, report=True)
        if self.loss == HINGE and rows.size:
            labelled = batch.ex_int[rows, NLABEL] > 0
            labels = batch.ex_float[rows, LABEL]
            for k in np.flatnonzero(labelled & (labels != 1.0) & (labels != -1.0)):
                row = int(rows[k])  # learned as given, as VW does
                self._log(f"[warning] {batch.source}:{batch.first_line + row}: label "
                          f"{labels[k]:g} is not -1 or 1 as the hinge loss expects")
        if self.loss == LOGISTIC and rows.size:
            self._check_logistic_labels(batch, rows)
        return rows

    def _logistic_labels(self, labels: np.ndarray) -> np.ndarray:
        """Labels as the logistic kernels read them: ``--logistic_min`` → -1, ``--logistic_max``
        → 1, a label between them → the soft label in between (VW 9.11.9's reading)."""
        low, high = self.options.logistic_min, self.options.logistic_max
        if low == -1.0 and high == 1.0:
            return labels
        return 2.0 * (labels - low) / (high - low) - 1.0

    def _check_logistic_labels(self, batch: ParsedBatch, rows: np.ndarray) -> None:
        """A label outside [--logistic_min, --logistic_max], or a soft one where only hard ones
        have an exact step (``--dyad``, ``--active``), is reported; its example is kept as an
        unlabelled one: predicted, not learned (``--strict_parse``: fatal)."""
        labelled = batch.ex_int[rows, NLABEL] > 0
        raw = batch.ex_float[rows, LABEL]
        labels = self._logistic_labels(raw)
        outside = labelled & ~((labels >= -1.0) & (labels <= 1.0))
        soft = labelled & ~outside & (labels != 1.0) & (labels != -1.0)
        hard_only = self.dyadic is not None or self.active is not None
        o = self.options
        if not self.told_soft_zero and o.logistic_min == -1.0 and np.any(soft & (raw == 0.0)):
            self.told_soft_zero = True  # VW's classic trap, which VW passes over in silence
            self._log("[info] a logistic label 0 is a soft label, probability 1/2 of class 1; "
                      "for 0/1 labels give --logistic_min 0")
        for k in np.flatnonzero(outside | (soft & hard_only)):
            row = int(rows[k])
            where = f"{batch.source}:{batch.first_line + row}"
            if outside[k]:
                text = (f"label {raw[k]:g} is outside [{o.logistic_min:g}, {o.logistic_max:g}], "
                        "the labels of the logistic loss (--logistic_min, --logistic_max)")
            else:
                text = (f"label {raw[k]:g} is a soft label, which "
                        f"{'--dyad' if self.dyadic is not None else '--active'} does not learn")
            self._predict_only(batch, row, f"{where}: {text} (line: {batch.line_text(row)!r})")

    def _predict_only(self, batch: ParsedBatch, row: int, message: str) -> None:
        """Keep an example whose label cannot be learned as an unlabelled one: predicted, not
        learned, with a warning (``--strict_parse``: the message is fatal)."""
        if self.options.strict_parse:
            raise ParseError(message)
        self._log(f"[warning] {message}; predicted, not learned")
        batch.ex_int[row, NLABEL] = 0

    def _multiclass_rows(self, batch: ParsedBatch, rows: np.ndarray, report: bool) -> np.ndarray:
        """Read class labels into ``batch.classes``; drop (and report) the unusable ones."""
        from .reductions.multiclass import FATAL, INVALID, UNLABELLED

        def log(row, text, outcome):
            where = f"{batch.source}:{batch.first_line + int(row)}"
            if self.options.strict_parse or outcome == FATAL:
                raise ParseError(f"{where}: {text} (line: {batch.line_text(int(row))!r})")
            if report:
                self._log(f"[warning] {where}: {text}; {outcome}")

        classes = self.reduction.classes_of(batch, rows, log, self._log if report else
                                            (lambda text: None))
        batch.classes = np.full(batch.ex_int.shape[0], UNLABELLED, dtype=np.int64)
        batch.classes[rows] = classes
        keep = classes != INVALID
        skipped = int((~keep).sum())
        if report:
            self.skipped += skipped
        return rows[keep]

    def prepare_cached(self, batch: ParsedBatch) -> np.ndarray:
        """Rows of a batch read back from the cache (validated when it was written)."""
        rows = np.arange(batch.ex_int.shape[0])
        return self._multiclass_rows(batch, rows, report=False) if self.reduction else rows

    # ------------------------------------------------------------------ learning
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

    def _expander(self):
        """The flattening kernel: without interactions one that does not compile their code."""
        return gd.expand_features if self.interactions.array.shape[0] else gd.expand_linear

    def learning_kernels(self) -> tuple:
        """The kernels that learn from parsed examples in this configuration: the feature
        expansion and the example loop of the reduction, the dyadic or the linear learner."""
        if self.reduction is not None:
            loops = self.reduction.kernels(self.dyadic is not None)
        elif self.dyadic is not None:
            loops = self.dyadic.kernels()
        else:
            loops = (self._linear_loop(),)
        return (self._expander(), *loops)

    def _linear_loop(self):
        """The linear learner's example loop: without --active one that does not compile the
        sampler's code."""
        return gd.learn_examples if self.active is not None else gd.learn_passive

    def _run_kernel(self, batch: ParsedBatch, rows: np.ndarray, holdout: np.ndarray,
                    training: bool):
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
            labels = np.ascontiguousarray(self._logistic_labels(labels))
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
            self.nan_predictions += self._linear_loop()(
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
            self._log(f"[warning] {batch.source}:{batch.first_line + int(rows[k])}: label "
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
            self._multiclass_rows(batch, rows, report=False)
        classes = batch.classes[rows]
        # a label out of range is never predicted right; --oaa learns it as no class's
        # example (VW), the trees predict it without learning (VW's --ect)
        strange = np.zeros(rows.size, bool) if batch.out_of_range is None else \
            batch.out_of_range[rows]
        learned = classes
        if self.reduction.out_of_range == "predict" and strange.any():
            from .reductions.multiclass import UNLABELLED
            learned = np.where(strange, UNLABELLED, classes)
        predicted = np.empty(rows.size, dtype=np.int64)
        o = self.options
        scores = np.empty((rows.size, self.reduction.classes)) \
            if o.scores or o.probabilities or self._want_scores or self.raw_scores else None
        for first, count, starts, slots, values, _ in self.expand(batch, rows):
            part = slice(first, first + count)
            nfeat[part] += np.diff(starts)
            self.reduction.run(self, starts, slots, values, learned[part], importances[part],
                               initials[part], holdout[part], predicted[part],
                               None if scores is None else scores[part], batch=batch,
                               rows=rows[part])
        pred[:] = predicted
        loss[:] = np.where((classes >= 0) & ((predicted != classes) | strange), importances, 0.0)
        if o.probabilities and not self._want_scores:
            from .reductions.scorer import logistic
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
        learner stops counting the uses of its latent rows, which size its default penalty."""
        self.params[gd.P_DYAD_COUNT] = 0.0

    def learn(self, examples) -> np.ndarray:
        """Learn from VW lines (a string, a list of strings) or a parsed batch, in order.

        Returns the progressive predictions (each made before its own update), one per example
        used: a malformed line is skipped with a warning, so ``last_rows`` says which rows of
        the batch (lines, in order) the outputs belong to.
        """
        batch = self._as_batch(examples)
        rows = self._valid_rows(batch)
        pred, _, _, _ = self._run_kernel(batch, rows, np.zeros(rows.size, np.uint8), self.training)
        return pred

    def predict(self, examples):
        """Predictions for VW lines or a parsed batch, one per example used (``last_rows``: their
        rows); the model is not changed.  One line (a string without a newline) gives one
        number (a class for a multiclass model), as pyvw's ``predict`` does."""
        predictions = self.predict_with_scores(examples)[0]
        if _one_line(examples, predictions):
            return int(predictions[0]) if self.reduction is not None else float(predictions[0])
        return predictions

    def predict_with_scores(self, examples) -> tuple[np.ndarray, np.ndarray]:
        """Predictions and the raw scores behind them (for a multiclass reduction, the class
        scores of --oaa/--sft as an (n, K) array); the model is not changed."""
        batch = self._as_batch(examples)
        rows = self._valid_rows(batch)
        saved_state = self.state.copy()
        saved_sampler = None if self.active is None else \
            (self.active.sampler.copy(), self.active.rng.bit_generator.state)
        self._want_scores = self.reduction is not None and self.reduction.name != "ect"
        try:
            pred, raw, _, _ = self._run_kernel(batch, rows, np.ones(rows.size, np.uint8), False)
        finally:
            self._want_scores = False
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
        one number, as :meth:`predict` does; several give an array."""
        weights = self._h_min(examples, target, label)
        return float(weights[0]) if _one_line(examples, weights) else weights

    def _h_min(self, examples, target: float, label: float | None) -> np.ndarray:
        tree = self.reduction is not None and self.reduction.name == "sft"
        if self.reduction is not None and not tree:
            raise ValueError("h_min is defined for binary learners and --sft")
        if tree and (target != 0.0 or label is not None):
            raise ValueError("under --sft, h_min is the reverting weight: no target or label")
        if self.params[gd.P_DYAD_DROPOUT]:
            raise ValueError("h_min assumes the model it predicts with learns; under "
                             "--lrqdropout an update moves a random half of it")
        batch = self._as_batch(examples)
        rows = self._valid_rows(batch)
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
                from .reductions.dyad import dyadic_hmin_examples
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

    # ------------------------------------------------------------------ persistence
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

    def _check_regularization(self, o: Options) -> None:
        """``--l1``/``--l2`` as VW's gd keeps them: global bookkeeping of the linear learner."""
        for name in ("l1", "l2"):
            value = getattr(o, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise OptionError(f"option '--{name}': {value:g} must be a number of at least 0")
        if self.reduction is not None:
            raise OptionError("--l1 and --l2 apply to the linear learner; the multiclass "
                              "reductions (--oaa, --ect, --sft) do not implement them")
        if self.active is not None:
            raise OptionError("--active's h_min assumes unregularised updates; --l1 and --l2 "
                              "cannot go with it")
        if o.executor:
            raise OptionError("--l1 and --l2 keep one global contraction per learner; they "
                              "cannot go with --executor's averaged shards")
        if self.dyadic is not None and o.l1:
            raise OptionError("--dyad takes --l2 (and --dyad_l2), not --l1")

    def model_data(self, predict_only: bool | None = None) -> ModelData:
        with self.synced_weights():
            return self._model_data(predict_only)

    def _model_data(self, predict_only: bool | None) -> ModelData:
        predict_only = self.options.predict_only_model if predict_only is None else predict_only
        columns = [gd.W] if predict_only or self.stride == 1 else [gd.W, gd.G, gd.N]
        values = self.weights[:, columns + self._latent_columns]
        nonzero = np.flatnonzero(np.any(values != 0, axis=1))
        values = values[nonzero]
        state = {"learner": self.state.tolist() if not predict_only
                 else [0.0, float(self.state[gd.MIN_LABEL]), float(self.state[gd.MAX_LABEL]), 0.0]
                 + [0.0] * (2 * self.models),
                 "stride": self.stride, "predict_only": bool(predict_only),
                 "class_stride": int(self.params[gd.P_CLASS_STRIDE]),
                 "slot_multiplier": int(self.slot_multiplier)}
        if self.latent:
            state["latent_columns"] = self.latent
        if not predict_only:
            state["power_t"] = self.options.power_t
            if self.active is not None:  # the sampler's evidence, for a later --active run
                state["sampler"] = self.active.sampler.tolist()
        arrays = {"rows": nonzero.astype(np.uint32), "values": values}
        if self.dyadic is not None:
            arrays["touched"] = np.packbits(self.touched)
        state["kept"] = self.options.kept_values()
        return ModelData(options=self.options.kept_argv(resume=not predict_only), state=state,
                         arrays=arrays)

    def save(self, path: str, predict_only: bool | None = None) -> None:
        """Write the model to ``path`` atomically."""
        save_model(path, self.model_data(predict_only), __version__)

    def finish(self) -> None:
        """Write the files the options name for the end of a run, as VW's ``finish()`` does:
        ``-f`` (the model, atomically) and ``--readable_model``.  The workspace stays usable."""
        if self.options.invert_hash:
            raise ValueError("--invert_hash needs the feature names of a command-line run "
                             "(pyvw-lite -d ...); from Python use write_readable_model")
        if self.options.final_regressor:
            self.save(self.options.final_regressor)
        if self.options.readable_model:
            self.write_readable_model(self.options.readable_model)

    def write_readable_model(self, path: str) -> None:
        with self.synced_weights():
            self._write_readable_model(path)

    def _write_readable_model(self, path: str) -> None:
        predict_only = self.options.predict_only_model
        resume = None if predict_only else self.resume_lines()
        shown = [gd.W] + self._latent_columns
        nonzero = np.flatnonzero(np.any(self.weights[:, shown] != 0, axis=1))
        body = "".join(self._weight_text(str(slot), int(slot), predict_only) for slot in nonzero)
        self._write_text_model(path, body, resume)

    def resume_lines(self) -> list[str]:
        """The learner's state after ``:1`` in a text dump (--readable_model, --invert_hash)."""
        return [f"t {self.state[gd.T_SUM]:g}", f"norm normalizer {self.state[gd.NORM_BASE]:g}",
                f"total_weight {self.state[gd.NORM_BASE + 1]:g}"]

    def _write_text_model(self, path: str, body: str, resume: list[str] | None) -> None:
        """VW's text header (checksum = CRC-32 of the body) followed by ``body``."""
        header = text_header(__version__, self.state[gd.MIN_LABEL], self.state[gd.MAX_LABEL],
                             self.bits, self.options.kept_argv(resume=resume is not None),
                             zlib.crc32(body.encode()), resume)
        with atomic_write(path, binary=False) as handle:
            handle.write(header + body)

    def _weight_text(self, name: str, slot: int, predict_only: bool) -> str:
        """``name:w`` (``name:w G N`` with accumulators), VW's line; a dyadic row adds its
        latent vector in brackets."""
        row = self.weights[slot]
        text = f"{name}:{row[gd.W]:g}"
        if not (predict_only or self.stride == 1):
            text += f" {row[gd.G]:g} {row[gd.N]:g}"
        if self.latent:
            text += " [" + " ".join(f"{v:g}" for v in row[self._latent_columns]) + "]"
        return text + "\n"

    # ------------------------------------------------------------------ names (audit, invert_hash)
    def feature_names(self, batch: ParsedBatch, row: int):
        """(name, slot, value) of every flattened feature of one example, VW's audit names."""
        from .io.vw_text import (F_NAME_END, F_NAME_START, F_SVAL_END, F_SVAL_START, SEG_END,
                                 SEG_FEND, SEG_FSTART, SEG_NAME_END, SEG_NAME_START, SEG_START)
        _, n, starts, slots, values, origins = next(self.expand(batch, np.array([row]), True))
        n = int(starts[1])
        namespace_of = {}
        for s in range(batch.ex_int[row, SEG_START], batch.ex_int[row, SEG_END]):
            ns = bytes(batch.buf[batch.seg[s, SEG_NAME_START]:batch.seg[s, SEG_NAME_END]]).decode(
                "utf-8", "replace")
            for j in range(batch.seg[s, SEG_FSTART], batch.seg[s, SEG_FEND]):
                namespace_of[j] = ns

        def name(j: int) -> str:
            if j == -1:
                return "Constant"
            span = batch.feat_span[j]
            text = bytes(batch.buf[span[F_NAME_START]:span[F_NAME_END]]).decode("utf-8", "replace")
            if span[F_SVAL_START] >= 0:
                text += "^" + bytes(batch.buf[span[F_SVAL_START]:span[F_SVAL_END]]).decode(
                    "utf-8", "replace")
            ns = namespace_of[j]
            return f"{ns}^{text}" if ns else text

        result = []
        for k in range(n):
            parts = [name(int(j)) for j in origins[k] if j != -2]
            result.append(("*".join(parts), int(slots[k]), float(values[k])))
        return result

    def audit_text(self, batch: ParsedBatch, row: int) -> str:
        """VW's --audit lines for one example, scored by the model as it is (before the
        example's update): the prediction, then each feature's ``name:slot:value:weight[@G]``,
        largest contribution first.  A multiclass model writes a block per sub-model it scores,
        as VW does: every class under --oaa/--sft (the class's score), the nodes on the
        prediction path from the root under --ect (the node's score)."""
        features = self.feature_names(batch, row)
        tag = self._tag(batch, row)
        if self.reduction is None:
            pred = self._run_kernel(batch, np.array([row]), np.ones(1, np.uint8), False)[0]
            return self._audit_block(features, 0, float(pred[0]), tag)
        from .reductions.multiclass import class_buffers
        _, offsets = class_buffers(self.reduction.slot_sets, self.mask, self.params)
        if self.reduction.name == "ect":
            tree, classes = self.reduction.tree, self.reduction.classes
            initial = float(batch.ex_float[row, INITIAL])
            blocks, node = [], 2 * classes - 2
            while node >= classes:
                problem = node - classes
                score = initial + sum(value * float(self.weights[(slot + offsets[problem])
                                                                 & self.mask, gd.W])
                                      for _, slot, value in features)
                score = min(max(score, self.state[gd.MIN_LABEL]), self.state[gd.MAX_LABEL])
                blocks.append((problem, score))
                node = tree.right[problem] if score > 0.0 else tree.left[problem]
        else:
            saved, self._want_scores = self.state.copy(), True
            try:
                scores = self._run_kernel(batch, np.array([row]), np.ones(1, np.uint8), False)[1]
            finally:
                self._want_scores = False
                self.state[:] = saved
            blocks = list(enumerate(scores[0].tolist()))
        return "".join(self._audit_block(features, int(offsets[c]), score, tag)
                       for c, score in blocks)

    def _audit_block(self, features, offset: int, prediction: float, tag: str) -> str:
        entries = []
        for name, slot, value in features:
            at = (slot + offset) & self.mask
            weight = float(self.weights[at, gd.W])
            text = f"{name}:{at}:{value:g}:{weight:g}"
            if self.adaptive and self.training:  # VW shows G while it learns (not with -t)
                text += f"@{float(self.weights[at, gd.G]):g}"
            entries.append((abs(value * weight), text))
        entries.sort(key=lambda item: -item[0])
        return (format_prediction(prediction) + (f" {tag}" if tag else "") + "\n\t"
                + "\t".join(text for _, text in entries) + "\n")

    @staticmethod
    def _tag(batch: ParsedBatch, row: int) -> str:
        start = batch.ex_int[row, TAG_START]
        if start < 0:
            return ""
        return bytes(batch.buf[start:batch.ex_int[row, TAG_END]]).decode("utf-8", "replace")

    # ------------------------------------------------------------------ the driver
    def run(self) -> int:
        """Run the VW-style job the options describe (what the ``pyvw-lite`` command does)."""
        if self.options.executor:
            from .distributed.learn import ShardedDriver
            return ShardedDriver(self).run()
        from .driver import Driver
        return Driver(self).run()
