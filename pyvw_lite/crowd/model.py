"""The nominal label model's settings and state (SPEC §E.1), saved and loaded as a model file.

The defaults (``defaults.py``) differ from SPEC §E.1's on purpose; every SPEC setting is one flag
away.

Worker slots: ``exact`` gives every distinct worker its own slot (batch default); ``hash`` puts
worker ``w`` in slot ``murmur3_32(w) mod 2**n_worker_bits`` (online default, SPEC §P.5), so memory
is fixed however many workers appear.  Slots without data differ by mode (SPEC errata 12): batch
EM sets them to the hypermean ``mu``; online EM leaves a never-written slot at ``nu``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from .._version import __version__
from ..io.crowd_input import CrowdData, hashed_slots
from ..io.model_io import ModelData, ModelError, load_model, save_model
from .defaults import DEFAULTS

KIND = "crowd"


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
        if K < 2:
            raise ValueError(f"need at least 2 labels, got {K}")
        if not self.label_names:
            self.label_names = [str(k) for k in range(K)]
        if len(self.label_names) != K:
            raise ValueError(f"{len(self.label_names)} label names for {K} labels")
        if not self.priorz:
            self.priorz = [1.0 / K] * K
        if len(self.priorz) != K:
            raise ValueError(f"--priorz has {len(self.priorz)} values; need {K} (one per label)")
        if any(not (value > 0.0) or not math.isfinite(value) for value in self.priorz):
            raise ValueError(f"--priorz values must be positive and finite: {self.priorz}")
        total = float(sum(self.priorz))
        self.priorz = [value / total for value in self.priorz]
        for name in ("sigma_alpha", "eta"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"--{name} must be positive")
        for name in ("sigma_mu", "sigma_b", "initial_t"):
            if getattr(self, name) < 0.0:
                raise ValueError(f"--{name} must not be negative")
        if self.worker_map not in ("hash", "exact"):
            raise ValueError(f"--worker_map must be hash or exact, not {self.worker_map!r}")
        if not 1 <= self.n_worker_bits <= 30:
            raise ValueError("--n_worker_bits must lie in 1..30")
        if self.rho < 0.0:
            raise ValueError("--rho must not be negative")
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
                 worker_slot: dict | None = None):
        self.config = config
        K = config.n_labels
        if n_slots is None:
            n_slots = 1 << config.n_worker_bits
        self.nu = nu_matrix(K, config.nu)
        self.alpha = np.broadcast_to(self.nu, (n_slots, K, K)).copy()
        self.mu = self.nu.copy()
        self.stamp = np.zeros(n_slots, dtype=np.int64)
        self.t = 0
        self.theta = config.log_priorz.copy()
        self.worker_slot = dict(worker_slot or {})  # exact map: worker id -> slot
        self.layout = parameter_layout(K, config.symmetric)

    @property
    def n_slots(self) -> int:
        return self.alpha.shape[0]

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

    def save(self, path: str) -> None:
        state = {"kind": KIND, "config": asdict(self.config), "t": int(self.t),
                 "workers": list(self.worker_slot.items())}
        arrays = {"alpha": self.alpha, "mu": self.mu, "stamp": self.stamp, "theta": self.theta}
        save_model(path, ModelData(options=[KIND], state=state, arrays=arrays), __version__)

    @classmethod
    def load(cls, path: str) -> "CrowdModel":
        data = load_model(path)
        if data.state.get("kind") != KIND:
            raise ModelError(f"{path}: not a crowd model (it was written by a VW-style learner)")
        try:
            return cls._from_data(data)
        except ModelError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise ModelError(f"{path}: malformed crowd model ({exc})") from None

    @classmethod
    def _from_data(cls, data) -> "CrowdModel":
        """The model a checked file holds; a field of the wrong kind or size raises."""
        state, arrays = data.state, data.arrays
        config = state["config"]
        known = {f.name for f in fields(CrowdConfig)}
        if not isinstance(config, dict) or not set(config) <= known:
            raise ValueError("unknown configuration fields")
        config = CrowdConfig(**config)
        workers = state["workers"]
        if not all(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                   and isinstance(pair[1], int) for pair in workers):
            raise ValueError("worker table")
        alpha = arrays["alpha"]
        K = config.n_labels
        if alpha.ndim != 3 or alpha.shape[1:] != (K, K) or arrays["mu"].shape != (K, K) \
                or arrays["stamp"].shape != alpha.shape[:1] or arrays["theta"].ndim != 1:
            raise ValueError("array shapes disagree with the configuration")
        if any(not 0 <= slot < alpha.shape[0] for _, slot in workers):
            raise ValueError("worker slot out of range")
        if not isinstance(state["t"], int) or isinstance(state["t"], bool):
            raise ValueError("t")
        model = cls(config, n_slots=alpha.shape[0], worker_slot=dict(workers))
        model.alpha = alpha
        model.mu = arrays["mu"]
        model.stamp = arrays["stamp"]
        model.theta = arrays["theta"]
        model.t = state["t"]
        return model
