"""Bayesian classifier combination by mean-field variational inference: BCC and EBCC.

The model (Kim & Ghahramani 2012 for BCC; Li, Rubinstein & Cohn, ICML 2019 for EBCC)::

    tau        ~ Dir(alpha)                    class prior
    pi_k       ~ Dir(a_pi / M, ..., a_pi / M)  subtype weights of class k (M subtypes)
    v_wkm      ~ Dir(beta_k)                   worker w's answer distribution for an item of
                                               class k, subtype m; beta_k = b_v + (a_v - b_v) e_k
    z_i ~ Cat(tau), y_i | z_i ~ Cat(pi_{z_i}), x_iw | z_i, y_i ~ Cat(v_{w z_i y_i})

BCC is M = 1.  With M > 1 the subtypes cluster the items of a class, and a worker may answer
the items of one cluster differently from those of another: that is how EBCC lets workers'
errors be correlated (two workers who both confuse cluster m of class k with class l), which
plain Dawid-Skene and BCC cannot express.

Mean-field posterior ``q(z, y) q(v) q(pi) q(tau)``, each factor in closed form given the others
(coordinate ascent, so the evidence lower bound never decreases):

* ``q(v_wkm) = Dir(beta_k + n_wkm)`` with ``n_wkml = sum of rho_ikm over w's answers l``;
* ``q(pi_k) = Dir(a_pi / M + sum_i rho_ikm)``, ``q(tau) = Dir(alpha + sum_im rho_ikm)``;
* ``rho_ikm ∝ exp(E log tau_k + E log pi_km + sum_w E log v_wkm x_iw)``, where
  ``E log`` of a Dirichlet coordinate is ``digamma(a_l) - digamma(sum a)``.

After the rho step the bound is ``sum_i log sum_km exp(s_ikm)`` minus the KL divergences of the
three Dirichlet factors from their priors (:func:`_dirichlet_kl`).  Restarts differ in the
random split of each item's majority-vote posterior among its class's subtypes; the restart
with the highest bound is kept.  ``alpha`` is 1 per class, or with ``empirical`` the
majority-vote class counts (EBCC's empirical class prior).  Gold items keep their class.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numba
import numpy as np

from ..io.crowd_input import CrowdData
from ..jit import kernel
from .defaults import EBCC_DEFAULTS
from .model import MAX_TABLE_BYTES

BCC_DEFAULTS = dict(EBCC_DEFAULTS, subtypes=1, restarts=1)


@kernel(inline="always")
def digamma(x):
    """psi(x) for x > 0: the recurrence up to x >= 6, then the asymptotic series (|error| <
    1e-12 there)."""
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return result + math.log(x) - 0.5 / x - series


@kernel
def _dirichlet_kl(posterior, prior):
    """KL(Dir(posterior) || Dir(prior)), summed over the rows of two 2-D arrays."""
    total = 0.0
    for r in range(posterior.shape[0]):
        a_sum = 0.0
        b_sum = 0.0
        for l in range(posterior.shape[1]):
            a_sum += posterior[r, l]
            b_sum += prior[r, l]
        psi_sum = digamma(a_sum)
        kl = math.lgamma(a_sum) - math.lgamma(b_sum)
        for l in range(posterior.shape[1]):
            a = posterior[r, l]
            kl += math.lgamma(prior[r, l]) - math.lgamma(a) + (a - prior[r, l]) * (digamma(a)
                                                                                   - psi_sum)
        total += kl
    return total


@kernel
def _expected_log(dirichlet, out):
    """E log of each coordinate of the Dirichlets in the rows of ``dirichlet``."""
    for r in range(dirichlet.shape[0]):
        total = 0.0
        for l in range(dirichlet.shape[1]):
            total += dirichlet[r, l]
        psi_sum = digamma(total)
        for l in range(dirichlet.shape[1]):
            out[r, l] = digamma(dirichlet[r, l]) - psi_sum


@kernel(parallel=True)
def _expected_log_by_column(dirichlet, out):
    """E log of the Dirichlets of ``dirichlet[w, :, c]`` (the answers' axis in the middle:
    the answer-major layout of :func:`_worker_counts`) into ``out``, one worker per task."""
    W, L, C = dirichlet.shape
    for w in numba.prange(W):
        totals = np.zeros(C)
        for l in range(L):
            for c in range(C):
                totals[c] += dirichlet[w, l, c]
        for c in range(C):
            totals[c] = digamma(totals[c])
        for l in range(L):
            for c in range(C):
                out[w, l, c] = digamma(dirichlet[w, l, c]) - totals[c]


@kernel
def _worker_counts(item_start, rating_worker, rating_label, rho, counts):
    """counts[w, l, k*M + m] = sum over w's answers l of rho[i, k*M + m].  Answer-major (the
    class-and-subtype cells last), so that this sum and the responsibilities' sum over a
    worker's cells run over contiguous memory."""
    counts[:] = 0.0
    KM = rho.shape[1]
    for i in range(item_start.size - 1):
        for r in range(item_start[i], item_start[i + 1]):
            w = rating_worker[r]
            l = rating_label[r]
            for c in range(KM):
                counts[w, l, c] += rho[i, c]


@kernel(parallel=True)
def _responsibilities(item_start, rating_worker, rating_label, gold, log_prior, elog_v, M, rho,
                      chunks):
    """rho_i ∝ exp(log_prior + sum_w elog_v[w, x_iw, :]) for every item (a gold item's mass on
    its class's subtypes only); returns sum_i log-normaliser and the largest change of an
    item's class posterior."""
    n_items = item_start.size - 1
    KM = rho.shape[1]
    bounds = np.empty(chunks)
    moves = np.empty(chunks)
    for chunk in numba.prange(chunks):
        score = np.empty(KM)
        total = 0.0
        move = 0.0
        first = chunk * n_items // chunks
        last = (chunk + 1) * n_items // chunks
        for i in range(first, last):
            for c in range(KM):
                score[c] = log_prior[c]
            for r in range(item_start[i], item_start[i + 1]):
                w = rating_worker[r]
                l = rating_label[r]
                for c in range(KM):
                    score[c] += elog_v[w, l, c]
            if gold[i] >= 0:
                for c in range(KM):
                    if c // M != gold[i]:
                        score[c] = -np.inf
            top = -np.inf
            for c in range(KM):
                top = max(top, score[c])
            norm = 0.0
            for c in range(KM):  # e^-50 < 2e-22 of the top cell's 1: left out, not computed
                gap = score[c] - top
                score[c] = math.exp(gap) if gap > -50.0 else 0.0
                norm += score[c]
            total += top + math.log(norm)
            old = 0.0
            new = 0.0
            for c in range(KM):
                value = score[c] / norm
                old += rho[i, c]
                new += value
                rho[i, c] = value
                if (c + 1) % M == 0:
                    move = max(move, abs(new - old))
                    old = 0.0
                    new = 0.0
        bounds[chunk] = total
        moves[chunk] = move
    return bounds.sum(), moves.max()


@dataclass
class BayesResult:
    q: np.ndarray  # class posteriors, items x K
    rho: np.ndarray  # class-and-subtype posteriors, items x (K*M)
    worker_dirichlet: np.ndarray  # workers x (K*M) x K posterior Dirichlet parameters
    class_dirichlet: np.ndarray  # K
    elbo: float
    elbo_history: list[float] = field(default_factory=list)
    iterations: int = 0
    converged: bool = False
    restart_elbos: list[float] = field(default_factory=list)
    seed: int = 0
    seconds: float = 0.0

    @property
    def labels(self) -> np.ndarray:
        return self.q.argmax(axis=1)

    def confusion(self) -> np.ndarray:
        """Each worker's expected confusion matrix (workers x K true x K answered), the
        subtypes of a class weighted by their share of the class's items."""
        W, KM, K = self.worker_dirichlet.shape
        M = KM // K
        mean = self.worker_dirichlet / self.worker_dirichlet.sum(axis=2, keepdims=True)
        weight = self.rho.sum(axis=0).reshape(K, M) + 1e-300
        weight /= weight.sum(axis=1, keepdims=True)
        return np.einsum("wkml,km->wkl", mean.reshape(W, K, M, K), weight)


def _majority_shares(data: CrowdData) -> np.ndarray:
    K = data.n_labels
    q = np.zeros((data.n_items, K))
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    np.add.at(q, (item, data.rating_label), 1.0)
    q /= np.maximum(q.sum(axis=1, keepdims=True), 1.0)
    known = data.gold >= 0
    q[known] = np.eye(K)[data.gold[known]]
    return q


def _one_restart(data: CrowdData, start: np.ndarray, alpha: np.ndarray, M: int, a_pi: float,
                 beta: np.ndarray, rng: np.random.Generator, max_iters: int, tol: float,
                 chunks: int, track: bool) -> BayesResult:
    K = data.n_labels
    W = len(data.worker_names)
    split = rng.dirichlet(np.ones(M), size=(data.n_items, K)) if M > 1 else np.ones(
        (data.n_items, K, 1))
    rho = (start[:, :, None] * split).reshape(data.n_items, K * M)
    counts = np.zeros((W, K, K * M))  # answer-major: counts[w, l, k*M + m]
    prior_v = np.repeat(beta, M, axis=0)  # (K*M) x K: row k*M + m is beta_k
    prior_columns = np.ascontiguousarray(prior_v.T)  # the same in counts' layout
    prior_pi = np.full((K, M), a_pi / M)
    elog_v = np.empty_like(counts)
    elog_pi = np.empty((K, M))
    elog_tau = np.empty((1, K))
    history = []
    converged = False
    elbo = -np.inf
    iteration = 0
    for iteration in range(1, max_iters + 1):
        _worker_counts(data.item_start, data.rating_worker, data.rating_label, rho, counts)
        post_v = counts + prior_columns[None]
        _expected_log_by_column(post_v, elog_v)
        mass = rho.sum(axis=0)
        post_pi = prior_pi + mass.reshape(K, M)
        _expected_log(post_pi, elog_pi)
        post_tau = (alpha + mass.reshape(K, M).sum(axis=1))[None]
        _expected_log(post_tau, elog_tau)
        log_prior = (elog_tau.T + elog_pi).ravel()
        bound, move = _responsibilities(data.item_start, data.rating_worker, data.rating_label,
                                        data.gold, log_prior, elog_v, M, rho, chunks)
        done = move < tol or iteration == max_iters
        if track or done:  # the KL terms cost as much as an iteration: only when wanted
            elbo = (bound - _dirichlet_kl(post_v.transpose(0, 2, 1).reshape(W * K * M, K),
                                          np.broadcast_to(prior_v, (W, K * M, K)).reshape(-1, K))
                    - (_dirichlet_kl(post_pi, prior_pi) if M > 1 else 0.0)
                    - _dirichlet_kl(post_tau, alpha[None]))
            history.append(elbo)
        if move < tol:
            converged = True
            break
    q = rho.reshape(data.n_items, K, M).sum(axis=2)
    _worker_counts(data.item_start, data.rating_worker, data.rating_label, rho, counts)
    return BayesResult(q=q, rho=rho,
                       worker_dirichlet=np.ascontiguousarray(counts.transpose(0, 2, 1))
                       + prior_v[None],
                       class_dirichlet=alpha + q.sum(axis=0), elbo=elbo, elbo_history=history,
                       iterations=iteration, converged=converged)


def bayes_fit(data: CrowdData, *, subtypes: int = 10, a_pi: float = 0.1, a_v: float = 4.0,
              b_v: float = 1.0, restarts: int = 10, max_iters: int = 500, tol: float = 1e-3,
              seed: int = 0, empirical_prior: bool = True, track_elbo: bool = False
              ) -> BayesResult:
    """Fit BCC (``subtypes=1``) or EBCC by mean-field VB; the best bound of ``restarts`` seeded
    restarts is kept (``restart_elbos`` lists them all).  Converged when no item's class
    posterior moves by ``tol`` in an iteration.  The bound is computed at the end of each
    restart, and with ``track_elbo`` after every iteration (``elbo_history``)."""
    if subtypes < 1 or restarts < 1 or max_iters < 1:
        raise ValueError("--subtypes, --restarts and --max_iters must be at least 1")
    for name, value in (("a_pi", a_pi), ("a_v", a_v), ("b_v", b_v), ("tol", tol)):
        if not math.isfinite(value):
            raise ValueError(f"--{name} {value}: not a finite number")
    if not (a_pi > 0 and a_v > 0 and b_v > 0 and tol > 0):
        raise ValueError("--a_pi, --a_v, --b_v and --tol must be positive")
    K = data.n_labels
    W = len(data.worker_names)
    size = W * K * K * subtypes * 8  # the answer counts; their expected logs are as large
    if size > MAX_TABLE_BYTES:
        raise ValueError(f"the worker table would take {size / (1 << 30):.1f} GiB ({W:,} workers x "
                         f"{K} x {K} labels x {subtypes} subtypes x 8 bytes), more than the "
                         f"{MAX_TABLE_BYTES >> 30} GiB a crowd model may use"
                         + ("; lower --subtypes" if subtypes > 1 else ""))
    started = time.perf_counter()
    start = _majority_shares(data)
    alpha = start.sum(axis=0) if empirical_prior else np.ones(K)
    alpha = np.maximum(alpha, 1e-3)  # a class no answer names keeps a proper prior
    beta = np.full((K, K), float(b_v))
    np.fill_diagonal(beta, a_v)
    chunks = max(1, min(numba.get_num_threads(), data.n_items // 2_000))
    best = None
    elbos = []
    for restart in range(restarts if subtypes > 1 else 1):  # BCC's start is deterministic
        rng = np.random.default_rng([seed, restart])
        fit = _one_restart(data, start, alpha, subtypes, a_pi, beta, rng, max_iters, tol, chunks,
                           track_elbo)
        elbos.append(fit.elbo)
        if best is None or fit.elbo > best.elbo:
            best, best.seed = fit, restart
    best.restart_elbos = elbos
    best.seconds = time.perf_counter() - started
    return best
