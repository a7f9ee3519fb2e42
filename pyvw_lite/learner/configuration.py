"""A learner's configuration from options: the checks of option values and combinations, the
reduction stack (multiclass, scorer, binary, active, dyadic), the weight table and the kernels'
parameters, and the state a model file restores."""
from __future__ import annotations

import math

import numpy as np

from ..io.hashing import CONSTANT_HASH
from ..io.model_io import ModelData, ModelError
from ..learners import gd
from ..learners.dyadic import RK4, TAYLOR
from ..learners.losses import LOGISTIC, LOSS_CODES, QUANTILE
from ..options import UPDATE_FLAGS, OptionError, Options
from ..reductions import active, binary, dyad, ect, oaa, scorer, sft
from ..reductions import interactions as interactions_mod


class Configuration:
    """The configuration of :class:`~pyvw_lite.learner.core.Learner` from its options (a part of
    it: ``_configure`` runs once, from the learner's ``__init__``)."""

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
        self.scorer = scorer.setup(o)
        self.binary = binary.setup(o)
        if self.binary is not None and self.reduction is not None:
            raise OptionError("--binary is for binary labels; it cannot go with a multiclass "
                              "reduction")
        if (o.scores or o.probabilities) and (self.reduction is None
                                              or self.reduction.name == "ect"):
            raise OptionError("--scores and --probabilities need --oaa or --sft")
        if o.probabilities and self.loss_name != "logistic":  # as VW warns
            self.log("[warning] --probabilities should be used only with "
                     f"--loss_function=logistic, currently using: {self.loss_name}")
        self.multiclass_log_loss = [0.0, 0.0]  # Σ -h·log p(true class), Σ h
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
        # the latent rate's --dyad_decay so far: a model keeps it, so a resumed run goes on
        # where it stopped (one saved before the option had none: 1)
        self.latent_scale = 1.0
        if settings and self.model is not None and "dyad_rate_scale" in self.model.state:
            self.latent_scale = float(self.model.state["dyad_rate_scale"])
            if not 0.0 < self.latent_scale < math.inf:
                raise ModelError(f"{o.initial_regressor}: malformed model (latent rate scale "
                                 f"{self.latent_scale:g})")
        self.params[gd.P_LATENT_RATE] = settings["rate"] * self.latent_scale if settings else 1.0
        self.params[gd.P_DYAD_POWER_T] = settings["power_t"] if settings else o.power_t
        self.params[gd.P_DYAD_SEED] = o.dyad_seed & 0xFFFFFFFF
        self.params[gd.P_DYAD_L2] = settings["l2"] if settings else 0.0
        self.params[gd.P_DYAD_L2_POWER] = settings["l2_power"] if settings else 0.0
        self.params[gd.P_DYAD_BIAS_L2] = settings["bias_l2"] if settings else 0.0
        self.params[gd.P_DYAD_ROW_L2] = settings["row_l2"] if settings else 0.0
        if settings and self.model is not None and "uses" not in self.model.arrays:
            # saved before the per-row counts: its rows count 1, so no default per-row penalty
            for name, index in (("dyad_bias_l2", gd.P_DYAD_BIAS_L2),
                                ("dyad_row_l2", gd.P_DYAD_ROW_L2)):
                if name not in o.given:
                    self.params[index] = 0.0
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
        self.want_scores = False
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
            self.log(f"[info] {self.options.initial_regressor} was trained with other update "
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
            if "uses" in model.arrays:  # counts of the touched rows (flags before them)
                self.touched[rows] = np.maximum(self.touched[rows], model.arrays["uses"])
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
    def latent_columns(self) -> list[int]:
        """The weight table's latent columns (none without --dyad)."""
        return list(range(self.stride, self.stride + self.latent))

    _latent_columns = latent_columns  # the name earlier callers (and tests) use

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
