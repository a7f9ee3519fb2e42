"""The nominal label model's settings and state (SPEC §E.1), saved and loaded as a model file.

The defaults (``defaults.py``) differ from SPEC §E.1's on purpose; every SPEC setting is one flag
away.

Worker slots: ``exact`` gives every distinct worker its own slot (batch default); ``hash`` puts
worker ``w`` in slot ``murmur3_32(w) mod 2**n_worker_bits`` (online default, SPEC §P.5), so memory
is fixed however many workers appear.  Slots without data differ by mode (SPEC errata 12): batch
EM sets them to the hypermean ``mu``; online EM leaves a never-written slot at ``nu``.

A model file is data (docs/security.md): :meth:`CrowdModel.load` checks every field against what
:meth:`CrowdModel.save` writes (types, dtypes, shapes, the table's 2**n_worker_bits slots, finite
numbers in range) before any kernel sees it, so no field can make a kernel index out of bounds.
Memory is stated up front: a worker table takes ``slots x K x K x 8`` bytes, at most
:data:`MAX_TABLE_BYTES`.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from .._version import __version__
from ..io.crowd_input import CrowdData, hashed_slots
from ..io.model_io import ModelData, ModelError, load_model, save_model
from .defaults import DEFAULTS

KIND = "crowd"
# stats and class_mass: the sufficient statistics online EM keeps (crowd/online.py)
ARRAYS = ("alpha", "mu", "stamp", "theta", "stats", "class_mass")
MAX_LABELS = 1024  # classes of a label model: each worker slot holds K x K logits
MAX_TABLE_BYTES = 1 << 30  # the worker table, slots x K x K float64 (batch EM holds a few)
T_LIMIT = 1 << 53  # item counters and stamps: exact as float64, which the decay schedule uses
SCALE_LIMITS = (1e-6, 1e6)  # prior standard deviations (1 / sigma^2 stays finite) and t0
# |nu|, eta0 and rho: a softmax saturates at logits of a few hundred, a step moves a cell by up
# to eta0 * beta; far beyond, the fits overflow (nu = 1e100 leaked into the pinned diagonal)
SETTING_LIMIT = 1e6
KAPPA_LIMIT = 30.0  # SPEC §E.3 keeps log-difficulty b in [-30, 30]; its prior mean too
# the logits a model holds (alpha, mu, theta): a trained model's lie within a few hundred;
# within this bound their squares and products with beta <= e^30 stay finite
LOGIT_LIMIT = 1e100


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_settings(settings: dict) -> None:
    """The numeric settings among ``settings`` (name -> value, as the command line names them),
    each a finite number in its range, or a ValueError naming the option."""
    ranges = {"nu": (-SETTING_LIMIT, SETTING_LIMIT), "kappa": (-KAPPA_LIMIT, KAPPA_LIMIT),
              "sigma_alpha": SCALE_LIMITS, "sigma_mu": SCALE_LIMITS, "sigma_b": SCALE_LIMITS,
              "eta": (0.0, SETTING_LIMIT), "rho": (0.0, SETTING_LIMIT),
              "initial_t": (SCALE_LIMITS[0], float(T_LIMIT)), "n_items": (0, T_LIMIT)}
    # 0 switches off the hyperprior, the difficulty model, the offset of the item counter
    zero_allowed = ("sigma_mu", "sigma_b", "initial_t")
    for name, (low, high) in ranges.items():
        if name not in settings:
            continue
        value = settings[name]
        if not (_is_integer(value) if name == "n_items" else _is_number(value)):
            raise ValueError(f"--{name} {value!r:.40}: not a number")
        if not math.isfinite(value):
            raise ValueError(f"--{name} {value}: not a finite number")
        if name in zero_allowed and value == 0:
            continue
        if name == "eta" and not value > 0.0:
            raise ValueError("--eta must be positive")
        if name in zero_allowed + ("rho", "n_items") and value < 0:
            raise ValueError(f"--{name} must not be negative")
        if not low <= value <= high:
            raise ValueError(f"--{name} {value:g}: outside {low:g}..{high:g}"
                             + (" (or 0)" if name in zero_allowed else ""))


def _size_text(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.1f} MiB"


def check_table_size(config: "CrowdConfig", n_slots: int) -> None:
    """Refuse a worker table beyond :data:`MAX_TABLE_BYTES`, naming its size and the way out."""
    K = config.n_labels
    size = n_slots * K * K * 16  # the logits and the answer statistics, float64 each
    if size <= MAX_TABLE_BYTES:
        return
    bits = (MAX_TABLE_BYTES // (K * K * 16)).bit_length() - 1  # K <= MAX_LABELS: bits >= 6
    if n_slots == 1 << config.n_worker_bits:
        way_out = f"lower --n_worker_bits to {bits} or less (workers then share slots)"
    else:
        way_out = (f"use --worker_map hash --n_worker_bits {bits} (workers then share slots) "
                   "or fewer labels")
    raise ValueError(f"the worker table would take {_size_text(size)} ({n_slots:,} slots x {K} x "
                     f"{K} labels x 16 bytes), more than the {_size_text(MAX_TABLE_BYTES)} a crowd "
                     f"model may use; {way_out}")


@dataclass
class CrowdConfig:
    n_labels: int
    label_names: list[str] = field(default_factory=list)
    priorz: list[float] = field(default_factory=list)  # normalised; empty = uniform
    learn_priorz: bool = DEFAULTS["learn_priorz"]
    symmetric: bool = DEFAULTS["symmetric"]
    nu: float = DEFAULTS["nu"]  # off-diagonal hyperprior mean
    sigma_alpha: float = DEFAULTS["sigma_alpha"]
    sigma_mu: float = DEFAULTS["sigma_mu"]  # 0 freezes mu at nu (--no_hyper)
    sigma_b: float = DEFAULTS["sigma_b"]  # 0 pins every item's difficulty at kappa
    kappa: float = DEFAULTS["kappa"]
    worker_map: str = "hash"  # hash | exact
    n_worker_bits: int = DEFAULTS["n_worker_bits"]
    eta: float = DEFAULTS["eta"]
    rho: float = DEFAULTS["rho"]
    initial_t: float = DEFAULTS["initial_t"]
    n_items: int = 0  # online prior weight |I|; 0 = the number of items in the input

    def __post_init__(self):
        K = self.n_labels
        if not _is_integer(K):
            raise ValueError(f"--n_labels {K!r:.40}: not an integer")
        if K < 2:
            raise ValueError(f"need at least 2 labels, got {K}")
        if K > MAX_LABELS:
            raise ValueError(f"--n_labels {K}: a label model has at most {MAX_LABELS} classes")
        check_settings({name: getattr(self, name) for name in (
            "nu", "kappa", "sigma_alpha", "sigma_mu", "sigma_b", "eta", "rho", "initial_t",
            "n_items")})
        if not self.label_names:
            self.label_names = [str(k) for k in range(K)]
        if len(self.label_names) != K:
            raise ValueError(f"{len(self.label_names)} label names for {K} labels")
        if not self.priorz:
            self.priorz = [1.0 / K] * K
        if len(self.priorz) != K:
            raise ValueError(f"--priorz has {len(self.priorz)} values; need {K} (one per label)")
        if any(not _is_number(value) or not (0.0 < value < math.inf) for value in self.priorz):
            raise ValueError(f"--priorz values must be positive and finite: {self.priorz}")
        total = float(sum(self.priorz))
        self.priorz = [value / total for value in self.priorz]
        if not math.isfinite(total) or min(self.priorz) == 0.0:  # a logit would be -inf
            raise ValueError("--priorz values span more than a float can hold")
        if self.worker_map not in ("hash", "exact"):
            raise ValueError(f"--worker_map must be hash or exact, not {self.worker_map!r}")
        if not _is_integer(self.n_worker_bits) or not 1 <= self.n_worker_bits <= 30:
            raise ValueError("--n_worker_bits must lie in 1..30")
        if self.rho >= 1.0 and self.initial_t <= 0.0:
            # SPEC errata 14: the first catch-up would snap every slot to mu
            raise ValueError(f"--rho {self.rho:g} needs --initial_t > 0")

    @property
    def log_priorz(self) -> np.ndarray:
        return np.log(np.asarray(self.priorz, dtype=np.float64))


def parameter_layout(K: int, symmetric: bool):
    """(cell_param, param_k, param_l): which free parameter each off-diagonal cell uses."""
    cell_param = np.full((K, K), -1, dtype=np.int64)
    param_k, param_l = [], []
    for k in range(K):
        for l in range(K):
            if k == l:
                continue
            if symmetric and l < k:
                cell_param[k, l] = cell_param[l, k]
                continue
            cell_param[k, l] = len(param_k)
            param_k.append(k)
            param_l.append(l)
    return cell_param, np.array(param_k, dtype=np.int64), np.array(param_l, dtype=np.int64)


def nu_matrix(K: int, nu: float) -> np.ndarray:
    matrix = np.full((K, K), float(nu))
    np.fill_diagonal(matrix, 0.0)
    return matrix


def confusion(alpha_slot: np.ndarray) -> np.ndarray:
    """softmax of each row (beta = 1): P(answer l | truth k)."""
    shifted = alpha_slot - alpha_slot.max(axis=-1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=-1, keepdims=True)


class CrowdModel:
    """Worker table, hypermean, slot stamps and item counter: everything online EM carries on."""

    def __init__(self, config: CrowdConfig, n_slots: int | None = None,
                 worker_slot: dict | None = None, *, arrays: dict | None = None, t: int = 0):
        """A fresh model (every slot at nu), or with ``arrays`` (alpha, mu, stamp, theta, as
        :meth:`load` checks them) the model they hold."""
        self.config = config
        K = config.n_labels
        self.nu = nu_matrix(K, config.nu)
        self.t = t
        self.worker_slot = dict(worker_slot or {})  # exact map: worker id -> slot
        self.layout = parameter_layout(K, config.symmetric)
        if arrays is not None:
            (self.alpha, self.mu, self.stamp, self.theta, self.stats,
             self.class_mass) = (arrays[name] for name in ARRAYS)
            return
        if n_slots is None:
            n_slots = 1 << config.n_worker_bits
        check_table_size(config, n_slots)
        self.alpha = np.broadcast_to(self.nu, (n_slots, K, K)).copy()
        self.mu = self.nu.copy()
        self.stamp = np.zeros(n_slots, dtype=np.int64)
        self.theta = config.log_priorz.copy()
        self.stats = np.zeros((n_slots, K, K))  # stats[m, l, k]: truth-k mass of m's answers l
        self.class_mass = np.zeros(K)  # the summed posteriors of the items without gold

    @property
    def n_slots(self) -> int:
        return self.alpha.shape[0]

    def check_arrays(self) -> None:
        """The arrays' dtypes and shapes, as the kernels index them (a cheap guard before each
        kernel call; :meth:`load` has checked their values)."""
        K, n_slots = self.config.n_labels, self.n_slots
        wanted = {"alpha": (np.float64, (n_slots, K, K)), "mu": (np.float64, (K, K)),
                  "stamp": (np.int64, (n_slots,)), "theta": (np.float64, (K,)),
                  "stats": (np.float64, (n_slots, K, K)), "class_mass": (np.float64, (K,))}
        for name, (dtype, shape) in wanted.items():
            array = getattr(self, name)
            if array.dtype != dtype or array.shape != shape or not array.flags.c_contiguous:
                raise ValueError(f"crowd model array {name} is {array.dtype}{list(array.shape)}, "
                                 f"not {np.dtype(dtype)}{list(shape)}")
        if len(self.worker_slot) > n_slots:
            raise ValueError(f"{len(self.worker_slot)} workers in an exact map of {n_slots} slots")

    def mu_share(self) -> float:
        """How a change to one alpha entry moves the hypermean (SPEC §E.6); 0 when mu is frozen."""
        c = self.config
        if c.sigma_mu == 0.0:
            return 0.0
        inv_alpha = 1.0 / c.sigma_alpha ** 2
        return inv_alpha / (1.0 / c.sigma_mu ** 2 + self.n_slots * inv_alpha)

    def slots_for(self, data: CrowdData, grow: bool = True) -> np.ndarray:
        """Each rating's worker slot, extending the exact map with new workers when allowed."""
        return self.worker_slots(data.worker_names, grow)[data.rating_worker]

    def worker_slots(self, worker_names, grow: bool = True) -> np.ndarray:
        """Each worker's slot; -1 for a worker an exact map does not know when ``grow`` is off."""
        if self.config.worker_map == "hash":
            return hashed_slots(worker_names, self.config.n_worker_bits)
        slots = np.empty(len(worker_names), dtype=np.int64)
        for w, name in enumerate(np.asarray(worker_names).tolist()):
            slot = self.worker_slot.get(name)
            if slot is None:
                if not grow:
                    slot = -1
                else:
                    slot = len(self.worker_slot)
                    if slot >= self.n_slots:
                        raise ValueError(
                            f"more than {self.n_slots} distinct workers with --worker_map exact "
                            f"(worker {name!r}); raise --n_worker_bits or use --worker_map hash")
                    self.worker_slot[name] = slot
            slots[w] = slot
        return slots

    def hypermean_confusion(self) -> np.ndarray:
        return confusion(self.mu)

    def check_savable(self, path: str) -> None:
        """Refuse a model :meth:`load` would refuse: a fit diverged (logits beyond
        :data:`LOGIT_LIMIT`, or not finite)."""
        arrays = {name: getattr(self, name) for name in ARRAYS}
        try:
            _check_values(arrays, self.config, int(self.t))
        except ValueError as exc:
            raise ValueError(f"{path}: not saved: the fit diverged ({exc})") from None

    def save(self, path: str) -> None:
        self.check_savable(path)
        state = {"kind": KIND, "config": asdict(self.config), "t": int(self.t),
                 "workers": list(self.worker_slot.items())}
        arrays = {name: getattr(self, name) for name in ARRAYS}
        save_model(path, ModelData(options=[KIND], state=state, arrays=arrays), __version__)

    @classmethod
    def load(cls, path: str) -> "CrowdModel":
        """A crowd model file, every field checked; anything a model does not hold is a
        one-line :class:`ModelError` (``PATH: malformed crowd model (...)``)."""
        data = load_model(path)
        if data.state.get("kind") != KIND:
            raise ModelError(f"{path}: not a crowd model (it was written by a VW-style learner)")
        try:
            return cls._from_data(data)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                OverflowError) as exc:
            raise ModelError(f"{path}: malformed crowd model ({exc})") from None

    @classmethod
    def _from_data(cls, data: ModelData) -> "CrowdModel":
        """The model a file holds, each field of the type, dtype, size and range that
        :meth:`save` writes; anything else raises a ValueError saying what."""
        if data.options != [KIND]:
            raise ValueError(f"options {data.options!r:.60}, not {[KIND]}")
        state = data.state
        if sorted(state) != ["config", "kind", "t", "workers"]:
            raise ValueError(f"state fields {sorted(state)!r:.80}, not config, kind, t, workers")
        config = _checked_config(state["config"])
        t = state["t"]
        if not _is_integer(t) or not 0 <= t <= T_LIMIT:
            raise ValueError(f"t = {t!r:.40}: not an item count in 0..2^53")
        workers = _checked_workers(state["workers"], config)
        arrays = data.arrays
        if sorted(arrays) == sorted(ARRAYS[:4]):
            raise ValueError("saved by an earlier pyvw-lite, before online EM kept its "
                             "statistics (stats, class_mass); fit the model again")
        if sorted(arrays) != sorted(ARRAYS):
            raise ValueError(f"arrays {', '.join(sorted(arrays))[:80]}, not {', '.join(ARRAYS)}")
        _check_shapes(arrays, config, len(workers))
        _check_values(arrays, config, t)
        return cls(config, worker_slot=dict(workers), arrays=arrays, t=t)


_KINDS = {"int": ("an integer", _is_integer), "float": ("a number", _is_number),
          "bool": ("true or false", lambda value: isinstance(value, bool)),
          "str": ("a string", lambda value: isinstance(value, str)),
          "list[str]": ("a list", lambda value: isinstance(value, list)),
          "list[float]": ("a list", lambda value: isinstance(value, list))}


def _checked_config(config) -> CrowdConfig:
    """A model's settings: every field of :class:`CrowdConfig`, each of its kind, checked before
    anything is built from them (a huge n_labels would be K names and K x K logits)."""
    names = sorted(f.name for f in fields(CrowdConfig))
    if not isinstance(config, dict) or sorted(config) != names:
        raise ValueError("config fields are not those of a crowd model")
    for setting in fields(CrowdConfig):
        what, test = _KINDS[setting.type]
        if not test(config[setting.name]):
            raise ValueError(f"config field {setting.name} = {config[setting.name]!r:.40}: not "
                             f"{what}")
    K = config["n_labels"]
    if not 2 <= K <= MAX_LABELS:
        raise ValueError(f"n_labels = {K}: a label model has 2..{MAX_LABELS} classes")
    names = config["label_names"]
    if len(names) != K or not all(isinstance(name, str) for name in names) \
            or len(set(names)) != K:
        raise ValueError(f"label_names {names!r:.60}: not {K} distinct strings")
    if len(config["priorz"]) != K or not all(_is_number(value) for value in config["priorz"]):
        raise ValueError(f"priorz {config['priorz']!r:.60}: not {K} numbers")
    return CrowdConfig(**config)  # the ranges of the settings (a ValueError naming the option)


def _checked_workers(workers, config: CrowdConfig) -> list:
    """An exact map's (worker, slot) pairs: distinct names on slots 0..W-1 in some order, as
    the map hands them out; a hashed map keeps none."""
    if not isinstance(workers, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
            and _is_integer(pair[1]) for pair in workers):
        raise ValueError("workers: not a list of [name, slot] pairs")
    if config.worker_map == "hash" and workers:
        raise ValueError("workers listed for a hashed worker map")
    if sorted(slot for _, slot in workers) != list(range(len(workers))) \
            or len({name for name, _ in workers}) != len(workers):
        raise ValueError("workers: not distinct names on slots 0..W-1")
    return workers


def _check_shapes(arrays: dict, config: CrowdConfig, n_workers: int) -> None:
    """Dtypes exactly as saved; a hashed map has 2^n_worker_bits slots, an exact map as many
    (online) or one per worker (batch); mu, theta and every slot are K wide."""
    for name in ARRAYS:
        wanted = np.dtype(np.int64 if name == "stamp" else np.float64)
        if arrays[name].dtype != wanted:
            raise ValueError(f"{name} of dtype {arrays[name].dtype}, not {wanted}")
    K = config.n_labels
    table = 1 << config.n_worker_bits
    n_slots = arrays["alpha"].shape[0] if arrays["alpha"].ndim == 3 else -1
    allowed = {table} if config.worker_map == "hash" else {table, max(n_workers, 1)}
    if n_slots not in allowed or n_workers > n_slots:
        held = "" if config.worker_map == "hash" else f" or one per worker ({n_workers})"
        raise ValueError(f"alpha of shape {arrays['alpha'].shape}: a {config.worker_map} map has "
                         f"2^{config.n_worker_bits} slots{held} of {K} x {K}")
    check_table_size(config, n_slots)
    wanted = {"alpha": (n_slots, K, K), "mu": (K, K), "stamp": (n_slots,), "theta": (K,),
              "stats": (n_slots, K, K), "class_mass": (K,)}
    for name, shape in wanted.items():
        if arrays[name].shape != shape:
            raise ValueError(f"{name} of shape {arrays[name].shape}, not {shape}")


def _check_values(arrays: dict, config: CrowdConfig, t: int) -> None:
    """Finite logits within ±LOGIT_LIMIT, the pinned diagonals at 0, tied cells equal with
    --symmetric, every stamp within 0..t."""
    for name in ("alpha", "mu", "theta"):
        values = arrays[name]
        if not np.isfinite(values).all():
            raise ValueError(f"{name} holds a number that is not finite")
        if values.size and np.abs(values).max() > LOGIT_LIMIT:
            raise ValueError(f"{name} holds a logit beyond ±{LOGIT_LIMIT:g}")
    diagonal = np.arange(config.n_labels)
    if (arrays["alpha"][:, diagonal, diagonal] != 0.0).any() \
            or (arrays["mu"][diagonal, diagonal] != 0.0).any():
        raise ValueError("alpha or mu has a diagonal cell other than 0 (the pinned logits)")
    if config.symmetric and ((arrays["alpha"] != arrays["alpha"].transpose(0, 2, 1)).any()
                             or (arrays["mu"] != arrays["mu"].T).any()):
        raise ValueError("alpha or mu is not symmetric, as --symmetric ties them")
    stamp = arrays["stamp"]
    if stamp.size and not (0 <= stamp.min() and stamp.max() <= t):
        raise ValueError(f"stamp outside 0..t = {t}")
    for name in ("stats", "class_mass"):  # posterior masses: each at most the answers seen
        values = arrays[name]
        if not np.isfinite(values).all() or (values.size and not (
                values.min() >= 0.0 and values.max() <= T_LIMIT)):
            raise ValueError(f"{name} holds a value that is not a count in 0..2^53")
