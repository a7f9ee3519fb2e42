"""A learner's configuration from options: the checks of option values and combinations, the
reduction stack (multiclass, scorer, binary, active, dyadic), the weight table's layout, and the
starting weight table, learning state and kernels' parameters, fresh or a model's."""
from __future__ import annotations

import math

import numpy as np

from ..io.hashing import CONSTANT_HASH
from ..io.model_io import ModelData, ModelError
from ..learners import gd
from ..learners.dyadic import RK4, TAYLOR
from ..learners.losses import LOGISTIC, LOSS_CODES, QUANTILE
from ..options import UPDATE_FLAGS, OptionError, Options
from ..reductions import active, binary, dyad, ect, lrq, oaa, scorer, sft
from ..reductions import interactions as interactions_mod
from ..reductions.tree import bracket


def writable(state: dict) -> dict:
    """An unpickled object's attributes with its read-only arrays (memory maps) copied: kernels
    want writable ones, and a read-only array would even compile a second kernel variant."""
    return {name: value.copy() if isinstance(value, np.ndarray) and not value.flags.writeable
            else value for name, value in state.items()}


def checked_schedule(path: str, name: str, value) -> float:
    """A latent schedule's field of a model (rate, decay, or the scale the decay reached): a
    number in the range the options allow, else a one-line error naming the file."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not dyad.in_schedule_range(
            "rate" if name == "dyad_rate" else "decay", value):
        raise ModelError(f"{path}: malformed model ({name} {value!r})")
    return float(value)


# -l (after VW's --initial_t^--power_t factor of plain updates) is at most a million; under
# --dyad its product with the latent rate's fraction --dyad_rate at most 100: the logistic flow
# overflowed to NaN from a product of 1,000 on (generated ratings, three seeds, every form)
MAX_LEARNING_RATE = 1e6
MAX_LATENT_PRODUCT = 100.0
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _given_or_stored(options: Options) -> str:
    return f" (given, or stored in {options.initial_regressor})" \
        if options.initial_regressor else ""


def check_schedule(options: Options) -> None:
    """``--power_t``, ``--decay_learning_rate`` and ``--initial_t`` within the range where the
    learning rate stays finite (checked before any of them reaches an array)."""
    where = _given_or_stored(options)
    # a negative --power_t makes the rate grow with t, a decay above 1 makes it grow with the
    # passes: both end in overflow, so they are refused like a rate beyond the bound
    for name, low, high, low_open in (("power_t", 0.0, 1.0, False),
                                      ("decay_learning_rate", 0.0, 1.0, True),
                                      ("initial_t", 0.0, MAX_LEARNING_RATE, False)):
        value = getattr(options, name)
        if not (low < value <= high if low_open else low <= value <= high):
            bounds = f"above {low:g} and at most {high:g}" if low_open \
                else f"between {low:g} and {high:g}"
            raise OptionError(f"option '--{name}': {value:g}{where} must be {bounds}")


def check_rates(options: Options, eta: float, latent_rate: float | None) -> None:
    """The learning rate ``eta`` the kernels take, and with ``latent_rate`` (``--dyad_rate``,
    a fraction of it) the latent one, within the range where the updates stay finite."""
    check_schedule(options)
    where = _given_or_stored(options)
    if not 0.0 <= eta <= MAX_LEARNING_RATE:
        gives = f" gives a rate of {eta:g};" if eta != options.learning_rate else ""
        raise OptionError(f"option '--learning_rate': {options.learning_rate:g}{where}{gives} "
                          f"must be between 0 and {MAX_LEARNING_RATE:g}")
    if latent_rate is not None and eta * latent_rate > MAX_LATENT_PRODUCT:
        raise OptionError(f"options '-l {eta:g} --dyad_rate {latent_rate:g}'{where}: their "
                          f"product, the latent rate, must be at most {MAX_LATENT_PRODUCT:g} "
                          "(beyond it the latent updates overflow)")


class Configuration:
    """What a learner's options decide, checked: the update rule and its rates, the hashing, the
    reduction stack and the weight table's layout (a resumed model's).
    :class:`~pyvw_lite.learner.core.Learner` holds one (``learner.config``) and reads these
    settings by their names; :meth:`tables` gives it its starting weight table, learning state
    and kernel parameters."""

    def __init__(self, options: Options, model: ModelData | None, log) -> None:
        """``model``: the model the learner resumes (``-i``), or ``None``; ``log`` writes the
        learner's log lines (``[warning] ...``)."""
        o = self.options = options
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
        if not (math.isfinite(o.constant) and abs(o.constant) <= FLOAT32_MAX):
            raise OptionError(f"option '--constant': {o.constant:g} must be a finite "
                              "number within float32 (the weight it starts is one)")
        self.bits = o.bit_precision
        self.mask = (1 << self.bits) - 1
        self.loss_name = o.loss_function
        self.loss = LOSS_CODES[self.loss_name]
        if not 0.0 < o.quantile_tau < 1.0:
            raise OptionError(f"option '--quantile_tau': {o.quantile_tau:g} must be between 0 "
                              "and 1 (0.5 aims at the median)")
        chosen = {name for name in UPDATE_FLAGS if name in o.given}
        self.dyadic = dyad.setup(o)
        self.lrq = lrq.setup(o)
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
        check_schedule(o)  # before any of them reaches the weight table
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
        self.scorer = scorer.setup(o)
        self.binary = binary.setup(o)
        if self.binary is not None and self.reduction is not None:
            raise OptionError("--binary is for binary labels; it cannot go with a multiclass "
                              "reduction")
        if (o.scores or o.probabilities) and (self.reduction is None
                                              or self.reduction.name == "ect"):
            raise OptionError("--scores and --probabilities need --oaa or --sft")
        if o.probabilities and self.loss_name != "logistic":  # as VW warns
            log("[warning] --probabilities should be used only with "
                f"--loss_function=logistic, currently using: {self.loss_name}")
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
        if self.lrq is not None:
            self._check_lrq(o)
        self.models = self.reduction.models if self.reduction is not None else 1
        if self.dyadic is not None and self.reduction is not None and \
                self.reduction.name == "ect":
            raise OptionError("--dyad goes with binary learning, --oaa or --sft (not --ect)")
        # a dyadic feature's latent vector: the last k columns of its linear weight's row
        self.latent = self.dyadic.rank if self.dyadic is not None else 0
        self.initial_t = initial_t  # the start of the rate's decay, as the update rule has it
        self.slot_multiplier = self._slot_multiplier(o, model)

    def __setstate__(self, state):
        # unpickled arrays may be read-only (memory maps); kernels want writable ones
        self.__dict__.update(writable(state))
        self.interactions = interactions_mod.setup(self.options)
        if self.reduction is not None and hasattr(self.reduction, "tree"):
            self.reduction.tree = bracket(self.reduction.classes)

    def tables(self, model: ModelData | None, log) -> tuple[np.ndarray, ...]:
        """The learner's starting ``(weights, state, params, touched)``: ``model``'s (``log``
        writes the note on its update flags) or fresh ones, as VW starts them."""
        o = self.options
        touched = np.zeros(1 << self.bits if self.dyadic is not None else 1, dtype=np.uint8)
        if model is not None:
            try:
                weights, state = self._restore(model, touched, log)
            except (ModelError, OptionError):
                raise
            except (ValueError, IndexError, TypeError, KeyError) as exc:  # shapes, sizes
                raise ModelError(f"{o.initial_regressor}: malformed model ({exc})") from None
        else:
            weights = self._empty_table()
            state = np.zeros(gd.state_size(self.models), dtype=np.float64)
            self._start_learning_state(weights, state)
            if not o.noconstant and o.constant:
                placed = self.slot_multiplier
                if placed != gd.HASH_MIX:  # VW's place for the binary layout (and --vw_layout)
                    placed = 1
                weights[int(gd.place_array(CONSTANT_HASH, placed, self.mask)), gd.W] = o.constant
            if self.loss == LOGISTIC:
                state[gd.MIN_LABEL], state[gd.MAX_LABEL] = -50.0, 50.0
        if o.min_prediction is not None:
            state[gd.MIN_LABEL] = o.min_prediction
        if o.max_prediction is not None:
            state[gd.MAX_LABEL] = o.max_prediction
        return weights, state, self._params(model), touched

    def resume_schedule(self, settings: dict, model: ModelData) -> None:
        """A resumed model learns on at the latent rate and decay it was trained with: those it
        saved (another value on the command line is refused, as for the options a model keeps),
        or for a model saved before issue 41's schedule (none saved) the constant rate that was
        the default then.  Each stored field is checked as the options are."""
        o = self.options
        stored = {}
        for flag in ("dyad_rate", "dyad_decay"):
            if flag in model.state:
                stored[flag] = checked_schedule(o.initial_regressor, flag, model.state[flag])
        if len(stored) == 1:
            raise ModelError(f"{o.initial_regressor}: malformed model ({next(iter(stored))} "
                             "without the other half of the latent schedule)")
        for name, flag, before in (("rate", "dyad_rate", dyad.PLAIN_RATE),
                                   ("decay", "dyad_decay", 1.0)):
            given = getattr(o, flag)
            if flag in stored:
                if given is not None and given != stored[flag]:
                    raise OptionError(f"{o.initial_regressor}: the model was trained with "
                                      f"--{flag} {stored[flag]:g}, not with {given:g}")
                settings[name] = stored[flag]
            elif given is None and settings[name] == (dyad.RIDGE_RATE if name == "rate"
                                                      else dyad.RIDGE_DECAY):
                settings[name] = before

    def _params(self, model: ModelData | None) -> np.ndarray:
        """The kernels' parameters (``gd.P_*``) as the options (and ``model``) set them."""
        o = self.options
        fixed = o.min_prediction is not None or o.max_prediction is not None
        params = np.zeros(gd.PARAM_SIZE, dtype=np.float64)
        params[gd.P_ETA] = self.eta
        params[gd.P_POWER_T] = o.power_t
        params[gd.P_LOSS] = self.loss
        params[gd.P_ADAPTIVE] = self.adaptive
        params[gd.P_NORMALIZED] = self.normalized
        params[gd.P_INVARIANT] = self.invariant
        params[gd.P_TRAINING] = self.training
        params[gd.P_CONSTANT] = not o.noconstant
        params[gd.P_FIXED_RANGE] = fixed
        params[gd.P_DYAD_ADAPTIVE] = not o.dyad_plain_rate
        params[gd.P_ODE_SOLVER] = TAYLOR if o.ode_solver == "taylor" else RK4
        settings = self.dyadic.settings if self.dyadic is not None else None
        if settings and model is not None:
            self.resume_schedule(settings, model)
        check_rates(o, self.eta, settings["rate"] if settings else None)
        # the latent rate's --dyad_decay so far: a model keeps it, so a resumed run goes on
        # where it stopped (one saved before the option had none: 1)
        self.latent_scale = 1.0
        if settings and model is not None and "dyad_rate_scale" in model.state:
            self.latent_scale = checked_schedule(o.initial_regressor, "latent rate scale",
                                                 model.state["dyad_rate_scale"])
            if self.latent_scale < dyad.lowest_latent_scale(settings["rate"]):  # as a pass stops
                raise ModelError(f"{o.initial_regressor}: malformed model (latent rate scale "
                                 f"{self.latent_scale!r} takes the latent rate "
                                 f"{settings['rate']:g} below {dyad.MIN_LATENT_RATE:g})")
        params[gd.P_LATENT_RATE] = settings["rate"] * self.latent_scale if settings else 1.0
        params[gd.P_DYAD_POWER_T] = settings["power_t"] if settings else o.power_t
        params[gd.P_DYAD_SEED] = o.dyad_seed & 0xFFFFFFFF
        params[gd.P_DYAD_L2] = settings["l2"] if settings else 0.0
        params[gd.P_DYAD_L2_POWER] = settings["l2_power"] if settings else 0.0
        params[gd.P_DYAD_BIAS_L2] = settings["bias_l2"] if settings else 0.0
        params[gd.P_DYAD_ROW_L2] = settings["row_l2"] if settings else 0.0
        if settings and model is not None and "uses" not in model.arrays:
            # saved before the per-row counts: its rows count 1, so no default per-row penalty
            for name, index in (("dyad_bias_l2", gd.P_DYAD_BIAS_L2),
                                ("dyad_row_l2", gd.P_DYAD_ROW_L2)):
                if name not in o.given:
                    params[index] = 0.0
        # --lrqdropout drops latent coordinates of binary and regression updates (VW's lrq)
        params[gd.P_DYAD_DROPOUT] = bool(settings and settings["dropout"])
        params[gd.P_DYAD_COUNT] = 1.0  # off once the data repeats: Learner.repeat_pass()
        params[gd.P_TAU] = o.quantile_tau
        params[gd.P_L1] = o.l1
        params[gd.P_L2] = o.l2
        params[gd.P_CONTRACTION] = 1.0
        if self.dyadic is not None:  # the linear terms' rates: adaptive and normalized, as VW's
            params[gd.P_NORMALIZED] = not o.dyad_plain_rate
        # models saved before the contiguous class layout keep the spread one they learned with
        params[gd.P_CLASS_STRIDE] = gd.CLASS_STRIDE if model is None else \
            model.state.get("class_stride", gd.LEGACY_CLASS_STRIDE)
        if params[gd.P_CLASS_STRIDE] not in (gd.CLASS_STRIDE, gd.LEGACY_CLASS_STRIDE):
            raise ModelError(f"{o.initial_regressor}: malformed model (class stride "
                             f"{params[gd.P_CLASS_STRIDE]:g})")
        return params

    def _slot_multiplier(self, o: Options, model: ModelData | None) -> int:
        """How feature hashes are placed in the weight table (``gd.place``): multiplied by W of
        VW's layout with --vw_layout, mixed (``gd.HASH_MIX``) for other multiclass and for
        --dyad models, as they are for a binary linear model (1).  A loaded model: what it
        records, 1 if nothing."""
        if o.vw_layout:
            return self._vw_layout_width(o)
        if self.lrq is not None:  # VW's rows per feature: 1 + K, rounded up to a power of two
            return self.lrq.width
        if model is not None:
            return int(model.state.get("slot_multiplier", 1))
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

    def _check_lrq(self, o: Options) -> None:
        """--lrq runs over the binary and regression linear learner, as VW's lrq over gd."""
        if self.dyadic is not None:
            raise OptionError("--lrq is VW's low-rank quadratic and --dyad pyvw-lite's "
                              "exact-flow learner; give one of them")
        if self.reduction is not None:
            raise OptionError("--lrq runs under binary and regression learning here (not "
                              "--oaa, --ect or --sft); --dyad LR --rank K goes with --oaa "
                              "and --sft")
        if self.active is not None:
            raise OptionError("--active's h_min is that of a linear model; --lrq cannot go "
                              "with it")
        if self.interactions.terms:
            raise OptionError("--lrq cannot go with -q, --cubic or --interactions here (VW "
                              "crosses --lrq's latent features too)")
        if o.executor:
            raise OptionError("--lrq cannot go with --executor's averaged shards")

    @staticmethod
    def _multiclass_reduction(o: Options):
        found = [r for r in (oaa.setup(o), ect.setup(o), sft.setup(o)) if r is not None]
        if len(found) > 1:
            raise OptionError("give one multiclass reduction: --oaa, --ect (--ft) or --sft")
        if not found and (o.named_labels or o.indexing is not None):
            raise OptionError("--named_labels and --indexing need --oaa, --ect or --sft")
        return found[0] if found else None

    def _start_learning_state(self, weights: np.ndarray, state: np.ndarray) -> None:
        """The learner's state before its first example, as VW starts it: ``t`` (and sub-model
        0's normalizer sums) at ``initial_t``, every adaptive sum at ``initial_t``."""
        initial_t = self.initial_t
        if self.adaptive and initial_t > 0:
            weights[:, gd.G] = initial_t
        state[gd.T_SUM] = state[gd.T_SEEN] = initial_t
        if self.normalized and initial_t > 0:  # VW starts sub-model 0's sums at initial_t
            state[gd.NORM_BASE] = state[gd.NORM_BASE + 1] = initial_t

    def _restore(self, model: ModelData, touched: np.ndarray, log) -> tuple[np.ndarray, ...]:
        """``model``'s ``(weights, state)``, its rows' counts into ``touched``; one saved without
        its learning state (--predict_only_model) goes on learning from a fresh state, as in
        VW."""
        saved = model.state
        if saved.get("stride") != self.stride and self.training and not saved.get("predict_only"):
            log(f"[info] {self.options.initial_regressor} was trained with other update "
                "flags (--sgd/--adaptive/--normalized): its per-feature accumulators are "
                "not used")
        weights = self._empty_table()
        rows = model.arrays["rows"].astype(np.int64)
        values = model.arrays["values"]
        if rows.size and rows.max() > self.mask:
            raise ModelError(f"{self.options.initial_regressor}: weight index out of range "
                             f"for -b {self.bits} (corrupt model)")
        linear = values.shape[1] - int(saved.get("latent_columns", 0))
        columns = min(linear, self.stride if self.stride == 1 else 3)
        if saved.get("stride") != self.stride:
            columns = 1
        weights[rows, :columns] = values[:, :columns]
        if self.latent:
            if saved.get("latent_columns") != self.latent:
                raise ModelError(f"{self.options.initial_regressor}: a dyadic model saved by "
                                 "an older pyvw-lite (latent vectors in rows of their own); "
                                 "retrain it with this version")
            weights[rows, -self.latent:] = values[:, -self.latent:]
        if "touched" in model.arrays and self.dyadic is not None:
            touched[:] = np.unpackbits(model.arrays["touched"])[:touched.size]
            if "uses" in model.arrays:  # counts of the touched rows (flags before them)
                touched[rows] = np.maximum(touched[rows], model.arrays["uses"])
        state = np.asarray(saved["learner"], dtype=np.float64).copy()
        if state.shape[0] == gd.state_size(self.models) - 2:
            # saved before the latent counts: its touched rows at the reference uses, so the
            # default penalty resumes where it was
            rows = float(np.count_nonzero(touched)) if self.dyadic is not None else 0.0
            state = np.append(state, [rows, rows * gd.L2_REFERENCE_USES])
        if "power_t" in saved and "power_t" not in self.options.given:
            self.options.power_t = saved["power_t"]  # VW keeps the decay with the resume state
        if state.shape[0] != gd.state_size(self.models):
            raise ModelError(f"{self.options.initial_regressor}: incompatible learner state")
        if saved.get("predict_only"):
            self._start_learning_state(weights, state)
        if self.active is not None and "sampler" in saved:
            self.active.resume(saved["sampler"])
        return weights, state

    def _empty_table(self) -> np.ndarray:
        """The zero weight table: ``stride`` linear columns, then the latent ones."""
        return np.zeros((1 << self.bits, self.stride + self.latent), dtype=np.float32)

    @property
    def latent_columns(self) -> list[int]:
        """The weight table's latent columns (none without --dyad)."""
        return list(range(self.stride, self.stride + self.latent))

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
