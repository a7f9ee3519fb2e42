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
from concurrent.futures import ThreadPoolExecutor
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
    1e-12 there).  The recurrence's sum of 1/x + 1/(x+1) + ... is kept as one fraction, so it
    costs one division, not up to six."""
    result = 0.0
    if x < 6.0:
        numerator = 0.0
        denominator = 1.0
        while x < 6.0:
            numerator = numerator * x + denominator
            denominator *= x
            x += 1.0
        result = -numerator / denominator
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


@kernel
def _vb_step(item_start, rating_worker, rating_label, label_count, gold, alpha, prior_columns,
             digamma_prior, prior_sum, dead_log, a_pi, M, rho, counts, elog_v, mass, is_live,
             live):
    """One coordinate-ascent iteration on one restart, in place: the worker counts and
    ``mass`` (sum_i rho_ic) from ``rho``, the expected logs of every Dirichlet factor, then the
    new ``rho``.  Returns (L, move, sum_i log-normaliser): the live cells it counted (column j
    of ``counts`` holds cell ``live[j]``), the largest move of an item's class posterior, and
    the bound's data term.

    Only the live cells (``is_live``: class-and-subtype cells to which some item gives a
    posterior above 0) are counted and scored answer by answer.  A dead cell's counts are all
    0, so its subtype weight and every worker's answer Dirichlet there are the prior's: all
    dead cells of class k score alike, the log prior plus the item's answer counts
    (``label_count[i, l]``) times the prior's expected logs (``dead_log``), K products per
    class and item instead of one term per answer and cell.  A dead class whose score comes
    within e^-50 of an item's top cell gets a posterior again, and its cells are live from the
    next iteration.  EBCC's sparse subtype prior empties most cells within 20-40 iterations,
    and the rest of a restart then costs about what BCC costs.  A worker never gave answer
    ``l`` when its counts for ``l`` are all 0, and then ``digamma`` of the prior alone is
    looked up (``digamma_prior``), not recomputed."""
    n_items, KM = rho.shape
    K = KM // M
    W = counts.shape[0]
    totals = np.empty(KM)
    log_prior = np.empty(KM)
    score = np.empty(KM)
    share = np.empty(KM)
    dead_score = np.empty(K)
    dead_prior = np.empty(K)  # the log prior of a dead cell of class k (mass 0: all alike)
    n_dead = np.zeros(K, dtype=np.int64)  # dead cells of class k
    live_class = np.empty(KM, dtype=np.int64)  # the class of cell live[j]
    was_live = np.empty(KM, dtype=np.bool_)
    old_class = np.empty(K)  # an item's class posterior before and after the step
    new_class = np.empty(K)
    L = 0
    for c in range(KM):
        if is_live[c]:
            live[L] = c
            live_class[L] = c // M
            L += 1
        else:
            n_dead[c // M] += 1
    counts[:, :, :L] = 0.0
    mass[:] = 0.0
    for i in range(n_items):
        for j in range(L):
            share[j] = rho[i, live[j]]
            mass[live[j]] += share[j]
        for r in range(item_start[i], item_start[i + 1]):
            w = rating_worker[r]
            l = rating_label[r]
            for j in range(L):
                counts[w, l, j] += share[j]
    for w in range(W):
        for j in range(L):
            totals[j] = prior_sum[live[j]]
        for l in range(K):
            for j in range(L):
                totals[j] += counts[w, l, j]
        for j in range(L):
            totals[j] = digamma(totals[j])
        for l in range(K):
            for j in range(L):
                x = counts[w, l, j]
                elog_v[w, l, j] = (digamma(x + prior_columns[l, live[j]]) if x != 0.0
                                   else digamma_prior[l, live[j]]) - totals[j]
    class_total = 0.0
    for k in range(K):
        pi_total = 0.0
        for m in range(M):
            pi_total += a_pi + mass[k * M + m]
            class_total += mass[k * M + m]
        class_total += alpha[k]
        psi_pi = digamma(pi_total)
        dead_prior[k] = digamma(a_pi) - psi_pi  # a cell of mass 0
        for m in range(M):
            log_prior[k * M + m] = digamma(a_pi + mass[k * M + m]) - psi_pi
    psi_tau = digamma(class_total)
    for k in range(K):
        class_mass = alpha[k]
        for m in range(M):
            class_mass += mass[k * M + m]
        tau = digamma(class_mass) - psi_tau
        dead_prior[k] += tau
        for m in range(M):
            log_prior[k * M + m] += tau
    bound = 0.0
    move = 0.0
    was_live[:] = is_live
    is_live[:] = False
    for i in range(n_items):
        for j in range(L):
            score[j] = log_prior[live[j]]
        for r in range(item_start[i], item_start[i + 1]):
            w = rating_worker[r]
            l = rating_label[r]
            for j in range(L):
                score[j] += elog_v[w, l, j]
        top = -np.inf
        for k in range(K):
            dead_score[k] = -np.inf
            if n_dead[k] > 0 and (gold[i] < 0 or gold[i] == k):
                value = dead_prior[k]
                for l in range(K):
                    value += label_count[i, l] * dead_log[k, l]
                dead_score[k] = value
                top = max(top, value)
        for j in range(L):
            if gold[i] >= 0 and live_class[j] != gold[i]:
                score[j] = -np.inf
            top = max(top, score[j])
        norm = 0.0
        for j in range(L):  # e^-50 < 2e-22 of the top cell's 1: left out, not computed
            gap = score[j] - top
            score[j] = math.exp(gap) if gap > -50.0 else 0.0
            norm += score[j]
        for k in range(K):
            gap = dead_score[k] - top
            dead_score[k] = math.exp(gap) if gap > -50.0 else 0.0
            norm += n_dead[k] * dead_score[k]
        bound += top + math.log(norm)
        inv = 1.0 / norm
        for k in range(K):
            old_class[k] = 0.0
            new_class[k] = 0.0
        for j in range(L):  # a dead cell's posterior was 0: only live cells held any
            c = live[j]
            old_class[live_class[j]] += rho[i, c]
            value = score[j] * inv
            rho[i, c] = value
            new_class[live_class[j]] += value
            if value != 0.0:
                is_live[c] = True
        for k in range(K):
            if dead_score[k] != 0.0:  # class k's dead cells come back
                value = dead_score[k] * inv
                for m in range(M):
                    if not was_live[k * M + m]:
                        rho[i, k * M + m] = value
                        new_class[k] += value
                        is_live[k * M + m] = True
            move = max(move, abs(new_class[k] - old_class[k]))
    return L, move, bound


@kernel
def _live_cells(rho, is_live):
    """is_live[c]: some item gives cell c a posterior above 0."""
    is_live[:] = False
    for i in range(rho.shape[0]):
        for c in range(rho.shape[1]):
            if rho[i, c] != 0.0:
                is_live[c] = True


@kernel
def _keep_columns(rho, columns, L, into):
    """into[:, j] = rho[:, columns[j]] for j < L."""
    for i in range(rho.shape[0]):
        for j in range(L):
            into[i, j] = rho[i, columns[j]]


@kernel
def _extrapolate(r0, r1, r2, columns, L, rho, is_live):
    """SQUAREM's step (Varadhan & Roland 2008, scheme S3) from three successive posteriors,
    each held in the ``L`` columns ``columns`` (every other cell is 0 in all three):
    ``rho = r0 - 2 a r + a^2 v`` with ``r = r1 - r0``, ``v = r2 - r1 - r`` and ``a = -|r| /
    |v|`` (at most -1; a = -1 gives r2), then each row clipped at 0, a cell that is 0 in ``r2``
    kept at 0, and rescaled to sum 1 (a row left with nothing takes r2's).  Returns ``a``;
    ``is_live`` is set from the new ``rho``."""
    rr = 0.0
    vv = 0.0
    n = rho.shape[0]
    for i in range(n):
        for j in range(L):
            r = r1[i, j] - r0[i, j]
            v = r2[i, j] - r1[i, j] - r
            rr += r * r
            vv += v * v
    a = -math.sqrt(rr / vv) if vv > 0.0 else -1.0
    a = min(a, -1.0)
    is_live[:] = False
    for i in range(n):
        total = 0.0
        for j in range(L):
            value = 0.0
            if r2[i, j] != 0.0:
                r = r1[i, j] - r0[i, j]
                v = r2[i, j] - r1[i, j] - r
                value = max(r0[i, j] - 2.0 * a * r + a * a * v, 0.0)
            rho[i, columns[j]] = value
            total += value
        if total == 0.0:
            for j in range(L):
                rho[i, columns[j]] = r2[i, j]
                total += r2[i, j]
        for j in range(L):
            rho[i, columns[j]] /= total
            if rho[i, columns[j]] != 0.0:
                is_live[columns[j]] = True
    return a


@kernel
def _vb_steps(item_start, rating_worker, rating_label, label_count, gold, alpha, prior_columns,
              digamma_prior, a_pi, M, rho, counts, elog_v, mass, steps, tol, accelerate):
    """Up to ``steps`` iterations of :func:`_vb_step` on one restart, in place; fewer once an
    iteration moves no item's class posterior by ``tol``.  Returns (iterations, converged, the
    last iteration's bound data term); ``counts`` and ``mass`` are left as the last
    iteration's, every cell in its own column.

    With ``accelerate``, iterations go in SQUAREM cycles (:func:`_extrapolate`): two plain
    iterations, a step along their trend, and one iteration from there, kept if its bound is
    at least the second plain iteration's (else the cycle ends at the second).  Mean-field
    coordinate ascent creeps where EBCC's subtypes empty slowly; the cycles reached the same
    bounds in a third to a half of the iterations on the shared sets.  Convergence is judged on
    plain iterations only, and the last iteration is always a plain one, so the bound and the
    counts returned belong to the returned ``rho``."""
    n_items, KM = rho.shape
    K = KM // M
    prior_sum = np.zeros(KM)
    for l in range(K):
        for c in range(KM):
            prior_sum[c] += prior_columns[l, c]
    dead_log = np.empty((K, K))  # class k's dead cells: expected log of answer l, any worker
    for k in range(K):
        psi_sum = digamma(prior_sum[k * M])
        for l in range(K):
            dead_log[k, l] = digamma_prior[l, k * M] - psi_sum
    is_live = np.zeros(KM, dtype=np.bool_)
    live = np.empty(KM, dtype=np.int64)
    _live_cells(rho, is_live)
    cycle = accelerate and steps >= 4
    r0 = np.empty((n_items, KM) if cycle else (0, KM))  # compact: column j is columns[j]
    r1 = np.empty_like(r0)
    r2 = np.empty_like(r0)
    columns = np.empty(KM, dtype=np.int64)
    live_at_r2 = np.empty(KM, dtype=np.bool_)
    in_cycle = np.empty(KM, dtype=np.bool_)
    done = 0
    bound = 0.0
    second = 0.0
    L = 0
    kept = 0
    converged = False
    phase = 0  # in a cycle: 1 and 2 after its plain iterations, 3 after the trend's step
    while done < steps:
        if phase == 0 and cycle and steps - done >= 4:  # room for a cycle and a last plain one
            kept = 0  # the cycle's cells: those live now (others stay 0 unless a class revives)
            in_cycle[:] = is_live
            for c in range(KM):
                if is_live[c]:
                    columns[kept] = c
                    kept += 1
            _keep_columns(rho, columns, kept, r0)
            phase = 1
        elif phase == 2:
            _keep_columns(rho, columns, kept, r1)
        L, move, bound = _vb_step(item_start, rating_worker, rating_label, label_count, gold,
                                  alpha, prior_columns, digamma_prior, prior_sum, dead_log,
                                  a_pi, M, rho, counts, elog_v, mass, is_live, live)
        done += 1
        if phase == 3:  # kept if the bound did not fall, else back to r2
            phase = 0
            if bound - _live_divergence(counts, elog_v, live, L, prior_columns, mass, a_pi,
                                        alpha, M) < second:
                for i in range(n_items):
                    for c in range(KM):
                        rho[i, c] = 0.0
                    for j in range(kept):
                        rho[i, columns[j]] = r2[i, j]
                is_live[:] = live_at_r2
            continue
        if move < tol:
            converged = True
            break
        if phase == 1:
            phase = 2
        elif phase == 2:
            phase = 0
            revived = False
            for c in range(KM):
                if is_live[c] and not in_cycle[c]:
                    revived = True
            if revived:
                continue  # a class came back: no trend to follow
            second = bound - _live_divergence(counts, elog_v, live, L, prior_columns, mass,
                                              a_pi, alpha, M)
            _keep_columns(rho, columns, kept, r2)
            live_at_r2[:] = is_live
            if _extrapolate(r0, r1, r2, columns, kept, rho, is_live) != -1.0:
                phase = 3  # else no trend to follow: rho is r2
    bound -= _live_divergence(counts, elog_v, live, L, prior_columns, mass, a_pi, alpha, M)
    _spread_counts(counts, live, L)
    return done, converged, bound


@kernel
def _spread_counts(counts, live, L):
    """Compact columns 0..L-1 (column j holds cell live[j]) back to each cell's own column,
    the dead cells' counts 0."""
    W, K, KM = counts.shape
    row = np.empty(KM)
    for w in range(W):
        for l in range(K):
            row[:] = 0.0
            for j in range(L):
                row[live[j]] = counts[w, l, j]
            for c in range(KM):
                counts[w, l, c] = row[c]


@kernel
def _live_divergence(counts, elog_v, live, L, prior_columns, mass, a_pi, alpha, M):
    """The KL divergences of the bound from their priors: every worker's answer Dirichlets of
    the live cells (column j of ``counts`` is cell ``live[j]``, answer-major), the subtype
    weights (M > 1) and the class prior.

    ``elog_v`` must be the expected logs of ``counts`` (as :func:`_vb_step` leaves them): a
    Dirichlet's KL is ``lgamma(sum a) - lgamma(sum b) + sum_l [lgamma(b_l) - lgamma(a_l) +
    (a_l - b_l) E log v_l]``, and a cell of answer ``l`` the worker never gave (a_l = b_l)
    adds nothing, so only the answers a worker gave cost a log-gamma; a dead cell's
    Dirichlet is its prior's, KL 0."""
    W, K = counts.shape[0], counts.shape[1]
    total = 0.0
    for w in range(W):
        for j in range(L):
            c = live[j]
            n_sum = 0.0
            b_sum = 0.0
            for l in range(K):
                n_sum += counts[w, l, j]
                b_sum += prior_columns[l, c]
            if n_sum == 0.0:
                continue
            kl = math.lgamma(b_sum + n_sum) - math.lgamma(b_sum)
            for l in range(K):
                x = counts[w, l, j]
                if x != 0.0:
                    b = prior_columns[l, c]
                    kl += math.lgamma(b) - math.lgamma(b + x) + x * elog_v[w, l, j]
            total += kl
    post_pi = np.empty((K, M))
    prior_pi = np.full((K, M), a_pi)
    post_tau = np.empty((1, K))
    for k in range(K):
        post_tau[0, k] = alpha[k]
        for m in range(M):
            post_pi[k, m] = a_pi + mass[k * M + m]
            post_tau[0, k] += mass[k * M + m]
    if M > 1:
        total += _dirichlet_kl(post_pi, prior_pi)
    prior_tau = np.empty((1, K))
    prior_tau[0, :] = alpha
    return total + _dirichlet_kl(post_tau, prior_tau)


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


class _Restart:
    """One restart's state: its class-and-subtype posteriors ``rho`` and the work arrays of
    :func:`_vb_steps`."""

    def __init__(self, data: CrowdData, start: np.ndarray, M: int, rng: np.random.Generator):
        K = data.n_labels
        split = rng.dirichlet(np.ones(M), size=(data.n_items, K)) if M > 1 else np.ones(
            (data.n_items, K, 1))
        self.rho = (start[:, :, None] * split).reshape(data.n_items, K * M)
        self.counts = np.zeros((len(data.worker_names), K, K * M))  # counts[w, l, k*M + m]
        self.elog_v = np.empty_like(self.counts)
        self.mass = np.zeros(K * M)
        self.iterations = 0
        self.converged = False
        self.elbo = -np.inf
        self.history: list[float] = []


class _Problem:
    """The data and priors every restart shares, and the steps on one restart."""

    def __init__(self, data: CrowdData, alpha: np.ndarray, beta: np.ndarray, M: int,
                 a_pi: float):
        self.data, self.alpha, self.M = data, alpha, M
        self.a_pi = a_pi / M  # each subtype's share of the subtype prior
        self.prior_v = np.repeat(beta, M, axis=0)  # (K*M) x K: row k*M + m is beta_k
        self.prior_columns = np.ascontiguousarray(self.prior_v.T)  # counts' layout: l x (K*M)
        self.digamma_prior = np.vectorize(_digamma_value)(self.prior_columns)
        self.label_count = np.zeros((data.n_items, data.n_labels))  # answers l of item i
        item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
        np.add.at(self.label_count, (item, data.rating_label), 1.0)

    def advance(self, run: _Restart, steps: int, tol: float, accelerate: bool = True) -> None:
        """Up to ``steps`` more iterations (SQUAREM cycles with ``accelerate``), and the
        restart's bound after the last."""
        d = self.data
        done, converged, run.elbo = _vb_steps(
            d.item_start, d.rating_worker, d.rating_label, self.label_count, d.gold, self.alpha,
            self.prior_columns, self.digamma_prior, self.a_pi, self.M, run.rho, run.counts,
            run.elog_v, run.mass, steps, tol, accelerate)
        run.iterations += done
        run.converged = converged

    def result(self, run: _Restart) -> "BayesResult":
        d, K, M = self.data, self.data.n_labels, self.M
        q = run.rho.reshape(d.n_items, K, M).sum(axis=2)
        _worker_counts(d.item_start, d.rating_worker, d.rating_label, run.rho, run.counts)
        return BayesResult(q=q, rho=run.rho,
                           worker_dirichlet=np.ascontiguousarray(run.counts.transpose(0, 2, 1))
                           + self.prior_v[None],
                           class_dirichlet=self.alpha + q.sum(axis=0), elbo=run.elbo,
                           elbo_history=run.history, iterations=run.iterations,
                           converged=run.converged)


def _digamma_value(x: float) -> float:
    return digamma(x)


def bayes_fit(data: CrowdData, *, subtypes: int = 10, a_pi: float = 0.1, a_v: float = 4.0,
              b_v: float = 1.0, restarts: int = 10, max_iters: int = 500, tol: float = 1e-3,
              seed: int = 0, empirical_prior: bool = True, track_elbo: bool = False,
              accelerate: bool = True, prior_weight: float = 1.0) -> BayesResult:
    """Fit BCC (``subtypes=1``) or EBCC by mean-field VB; the best bound of ``restarts`` seeded
    restarts is kept (``restart_elbos`` lists them all).  Converged when no item's class
    posterior moves by ``tol`` in an iteration.  The bound is computed at the end of each
    restart, and with ``track_elbo`` after every iteration (``elbo_history``).
    ``prior_weight`` multiplies the class prior's Dirichlet parameters: with the empirical
    prior, a large weight holds the class prior at the majority vote's class shares."""
    if subtypes < 1 or restarts < 1 or max_iters < 1:
        raise ValueError("--subtypes, --restarts and --max_iters must be at least 1")
    for name, value in (("a_pi", a_pi), ("a_v", a_v), ("b_v", b_v), ("tol", tol),
                        ("prior_weight", prior_weight)):
        if not math.isfinite(value):
            raise ValueError(f"--{name} {value}: not a finite number")
    if not (a_pi > 0 and a_v > 0 and b_v > 0 and tol > 0 and prior_weight > 0):
        raise ValueError("--a_pi, --a_v, --b_v, --tol and prior_weight must be positive")
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
    alpha = np.maximum(alpha, 1e-3) * prior_weight  # a class no answer names keeps a proper prior
    beta = np.full((K, K), float(b_v))
    np.fill_diagonal(beta, a_v)
    problem = _Problem(data, alpha, beta, subtypes, a_pi)
    count = restarts if subtypes > 1 else 1  # BCC's start is deterministic

    def fit(restart: int) -> _Restart:
        run = _Restart(data, start, subtypes, np.random.default_rng([seed, restart]))
        if track_elbo:  # the bound after every iteration: one step at a time
            while run.iterations < max_iters and not run.converged:
                problem.advance(run, 1, tol)
                run.history.append(run.elbo)
        else:
            problem.advance(run, max_iters, tol, accelerate)
        return run

    runs = _side_by_side(fit, range(count))
    elbos = [run.elbo for run in runs]
    chosen = int(np.argmax(elbos))  # the first of equal bounds
    best = problem.result(runs[chosen])
    best.seed = chosen
    best.restart_elbos = elbos
    best.seconds = time.perf_counter() - started
    return best


def _side_by_side(fit, restarts) -> list:
    """``fit`` over the restarts, two at a time on two threads (the kernels release the GIL);
    results in restart order, so the choice does not depend on which finished first."""
    restarts = list(restarts)
    threads = min(len(restarts), numba.config.NUMBA_NUM_THREADS, 2)
    if threads <= 1:
        return [fit(restart) for restart in restarts]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(fit, restarts))
