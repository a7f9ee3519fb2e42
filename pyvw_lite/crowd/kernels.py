"""numba kernels of the nominal label model (SPEC §E): per-item inference, worker steps, lazy prior.

Array conventions shared by every kernel:

* ratings are grouped by item: item ``i`` owns ratings ``item_start[i]:item_start[i+1]``, each a
  worker slot ``rating_slot[r]`` and an observed label ``rating_label[r]`` in ``0..K-1``;
* ``alpha[m, k, l]`` is slot ``m``'s confusion logit of answering ``l`` when the truth is ``k``;
  the diagonal is pinned at 0;
* the free entries are parameters ``0..P-1``: ``cell_param[k, l]`` names the parameter of cell
  ``(k, l)`` (-1 on the diagonal) and ``param_k[p], param_l[p]`` one representative cell.  With
  ``--symmetric`` both cells of a pair share one parameter, so a gradient collects both cells and
  the prior counts the pair once (SPEC §E.1);
* ``gold[i]`` is the known label of item ``i`` or -1; ``log_prior`` the log class prior of the
  other items.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from ..jit import kernel

B_CLAMP = 30.0  # SPEC §E.3: b stays in [-30, 30]
B_NEWTON_ITERS = 30
B_GRADIENT_TOL = 1e-10
HALVINGS = 40
RESOLUTION = 1e-14  # relative: gains and steps below this are rounding, not progress
SUM_SCALE = float(2 ** 36)  # fixed point of the answer sums: exact up to 2^27 ratings of a row


@kernel(inline="always")
def _row_softmax(alpha, m, k, beta, out):
    """out = softmax(beta * alpha[m, k, :]), P(answer | truth k); returns the log normaliser."""
    K = alpha.shape[1]
    top = 0.0  # the pinned diagonal contributes beta * 0
    for l in range(K):
        top = max(top, beta * alpha[m, k, l])
    total = 0.0
    for l in range(K):
        out[l] = math.exp(beta * alpha[m, k, l] - top)
        total += out[l]
    for l in range(K):
        out[l] /= total
    return top + math.log(total)


@kernel(inline="always")
def _item_terms(alpha, start, end, rating_slot, rating_label, beta, K, LL, D1, D2, probs,
                moments):
    """Per true class k: LL = sum_j log P(l_j|k), D1 = g'(beta) terms, D2 = -g''(beta) terms.

    ``probs[j, k, :]`` receives P(. | k) of the item's j-th rating, which the online gradient
    step reuses.
    """
    for k in range(K):
        LL[k] = 0.0
        D1[k] = 0.0
        D2[k] = 0.0
    for r in range(start, end):
        m = rating_slot[r]
        label = rating_label[r]
        j = r - start
        for k in range(K):
            LL[k] += beta * alpha[m, k, label] - _row_softmax(alpha, m, k, beta, probs[j, k])
            if moments:  # only the b-step needs them
                first = 0.0
                second = 0.0
                for l in range(K):
                    first += probs[j, k, l] * alpha[m, k, l]
                    second += probs[j, k, l] * alpha[m, k, l] * alpha[m, k, l]
                D1[k] += alpha[m, k, label] - first
                D2[k] += max(second - first * first, 0.0)


@kernel(inline="always")
def softmax_into(values, out):
    """out = softmax(values) (out may be values); returns log sum exp(values)."""
    top = values.max()
    total = 0.0
    for k in range(values.size):
        out[k] = math.exp(values[k] - top)
        total += out[k]
    for k in range(values.size):
        out[k] /= total
    return top + math.log(total)


@kernel(inline="always")
def _posterior(LL, log_prior, gold, K, q):
    """E-step (exact maximiser over the simplex, SPEC §E.3 step 4); returns F without the b prior."""
    if gold >= 0:
        for k in range(K):
            q[k] = 0.0
        q[gold] = 1.0
        return LL[gold]
    for k in range(K):
        q[k] = log_prior[k] + LL[k]
    return softmax_into(q, q)  # = sum_k q (log P + LL) + H(q) at the posterior


@kernel(inline="always")
def _expected(q, values, K):
    total = 0.0
    for k in range(K):
        if q[k] > 0.0:
            total += q[k] * values[k]
    return total


@kernel
def b_step(alpha, start, end, rating_slot, rating_label, K, q, b, kappa, sigma_b, LL, D1, D2,
           probs):
    """SPEC §E.3 step 1: Newton with backtracking on G(b) for fixed q; leaves LL/D1/D2 at the result.

    The caller's LL/D1/D2/probs must hold the terms at ``b``.  Returns the new b.
    """
    inv_var = 1.0 / (sigma_b * sigma_b)
    beta = math.exp(b)
    G = _expected(q, LL, K) - 0.5 * (b - kappa) ** 2 * inv_var
    for _ in range(B_NEWTON_ITERS):
        g1 = _expected(q, D1, K)
        g2 = -_expected(q, D2, K)
        G1 = beta * g1 - (b - kappa) * inv_var
        if abs(G1) < B_GRADIENT_TOL:
            break
        G2 = beta * g1 + beta * beta * g2 - inv_var
        step = -G1 / G2 if G2 < 0.0 else sigma_b * sigma_b * G1
        if abs(G1 * step) < RESOLUTION * max(1.0, abs(G)):
            break  # the possible gain is below what G can resolve
        accepted = False
        for _ in range(HALVINGS):
            candidate = min(max(b + step, -B_CLAMP), B_CLAMP)
            if abs(candidate - b) <= RESOLUTION * (1.0 + abs(b)):
                break
            cand_beta = math.exp(candidate)
            _item_terms(alpha, start, end, rating_slot, rating_label, cand_beta, K, LL, D1, D2,
                        probs, True)
            cand_G = _expected(q, LL, K) - 0.5 * (candidate - kappa) ** 2 * inv_var
            if cand_G >= G:
                accepted = True
                b, beta, G = candidate, cand_beta, cand_G
                break
            step *= 0.5
        if not accepted:
            _item_terms(alpha, start, end, rating_slot, rating_label, beta, K, LL, D1, D2, probs,
                        True)
            break
        if b == B_CLAMP or b == -B_CLAMP:
            break
    return b


@kernel
def item_inner_em(alpha, start, end, rating_slot, rating_label, K, log_prior, gold, b, kappa,
                  sigma_b, rounds, q, LL, D1, D2, probs):
    """Alternate E-steps and b-steps for one item with the worker parameters fixed (SPEC §E.4 3).

    Starts with an E-step at ``b``.  ``rounds`` = 1 is one batch iteration (E, b, E); the online
    procedure repeats until F-hat rises by less than 1e-9 relative.  Returns
    (b, F-hat after the first E-step, F-hat at the end); ``q`` holds the final posterior.
    """
    prior_term = 0.5 * ((b - kappa) / sigma_b) ** 2 if sigma_b > 0.0 else 0.0
    _item_terms(alpha, start, end, rating_slot, rating_label, math.exp(b), K, LL, D1, D2, probs,
                sigma_b > 0.0)
    first = _posterior(LL, log_prior, gold, K, q) - prior_term
    current = first
    if sigma_b <= 0.0:
        return b, first, first
    for _ in range(rounds):
        b = b_step(alpha, start, end, rating_slot, rating_label, K, q, b, kappa, sigma_b,
                   LL, D1, D2, probs)
        value = _posterior(LL, log_prior, gold, K, q) - 0.5 * ((b - kappa) / sigma_b) ** 2
        gain = value - current
        current = value
        if gain < 1e-9 * max(1.0, abs(value)):
            break
    return b, first, current


@kernel(parallel=True)
def batch_items(alpha, item_start, rating_slot, rating_label, K, log_prior, gold, b, kappa,
                sigma_b, q):
    """One batch pass over the items: E-step (and b-step) each; returns sum of F-hat_i at entry.

    The entry values are the objective's item part at the current worker parameters.
    """
    n_items = item_start.size - 1
    values = np.zeros(n_items)
    for i in prange(n_items):
        LL = np.empty(K)
        D1 = np.empty(K)
        D2 = np.empty(K)
        probs = np.empty((item_start[i + 1] - item_start[i], K, K))
        new_b, first, _ = item_inner_em(alpha, item_start[i], item_start[i + 1], rating_slot,
                                        rating_label, K, log_prior, gold[i], b[i], kappa,
                                        sigma_b, 1, q[i], LL, D1, D2, probs)
        b[i] = new_b
        values[i] = first
    return values.sum()


@kernel(parallel=True)
def batch_items_fixed_beta(log_table, item_start, rating_row, K, log_prior, gold, b_prior_term, q,
                           n_chunks):
    """E-step with every beta equal (no difficulty), fused with the worker step's statistics.

    ``rating_row[r]`` = slot * K + answer of rating r, and ``log_table[row, k]`` = log P(answer |
    truth k) of that slot.  Returns (sum of F-hat_i, label sums, class mass): ``sums[row, k]`` =
    the posterior mass of truth k over the row's ratings; ``mass[k]`` = the posterior mass of
    truth k over items without gold.  Each of ``n_chunks`` threads fills its own copy of the sums
    (no write races).  The sums are kept in fixed point (posteriors rounded to 2^-36): integer
    sums do not depend on the order of addition, so any split of the items into chunks or
    shards gives bit-identical statistics.
    """
    n_items = item_start.size - 1
    n_rows = log_table.shape[0]
    partial = np.zeros((n_chunks, n_rows, K), dtype=np.int64)
    mass = np.zeros((n_chunks, K), dtype=np.int64)
    values = np.zeros(n_chunks)
    for c in prange(n_chunks):
        LL = np.empty(K)
        sums = partial[c]
        total = 0.0
        for i in range(c * n_items // n_chunks, (c + 1) * n_items // n_chunks):
            LL[:] = 0.0
            for r in range(item_start[i], item_start[i + 1]):
                row = rating_row[r]
                for k in range(K):
                    LL[k] += log_table[row, k]
            posterior = q[i]
            total += _posterior(LL, log_prior, gold[i], K, posterior) - b_prior_term
            for k in range(K):
                fixed = np.int64(posterior[k] * SUM_SCALE + 0.5)
                if gold[i] < 0:
                    mass[c, k] += fixed
                for r in range(item_start[i], item_start[i + 1]):
                    sums[rating_row[r], k] += fixed
        values[c] = total
    sums = np.zeros((n_rows, K))
    for row in prange(n_rows):
        for k in range(K):
            exact = np.int64(0)
            for c in range(n_chunks):
                exact += partial[c, row, k]
            sums[row, k] = exact / SUM_SCALE
    class_mass = np.zeros(K)
    for k in range(K):
        class_mass[k] = mass[:, k].sum() / SUM_SCALE
    return values.sum(), sums, class_mass


@kernel(parallel=True)
def log_likelihood_table(alpha, beta):
    """log P(l | k, alpha[m], beta) for every slot, answer l and truth k, as ``[m, l, k]``."""
    M, K, _ = alpha.shape
    table = np.empty_like(alpha)
    for m in prange(M):
        scratch = np.empty(K)
        for k in range(K):
            log_total = _row_softmax(alpha, m, k, beta, scratch)
            for l in range(K):
                table[m, l, k] = beta * alpha[m, k, l] - log_total
    return table


@kernel(inline="always")
def _slot_objective(alpha, mu, m, obs_start, obs_end, obs_row, obs_label, weights, betas,
                    cell_param, param_k, param_l, inv_var_alpha, grad, hess, want_derivatives):
    """Slot m's part of F: sum over its observations of E_q log P(l|k) minus its prior."""
    K = alpha.shape[1]
    P = param_k.size
    value = 0.0
    if want_derivatives:
        for p in range(P):
            grad[p] = 0.0
            for p2 in range(P):
                hess[p, p2] = 0.0
    probs = np.empty(K)
    for o in range(obs_start, obs_end):
        row = obs_row[o]
        label = obs_label[o]
        beta = betas[row]
        for k in range(K):
            w = weights[row, k]
            if w <= 0.0:
                continue
            value += w * (beta * alpha[m, k, label] - _row_softmax(alpha, m, k, beta, probs))
            if not want_derivatives:
                continue
            wb = w * beta
            wbb = wb * beta
            for l in range(K):
                p = cell_param[k, l]
                if p < 0:
                    continue
                grad[p] += wb * ((1.0 if l == label else 0.0) - probs[l])
                for l2 in range(K):
                    p2 = cell_param[k, l2]
                    if p2 < 0:
                        continue
                    hess[p, p2] -= wbb * ((probs[l] if l == l2 else 0.0) - probs[l] * probs[l2])
    for p in range(P):
        d = alpha[m, param_k[p], param_l[p]] - mu[param_k[p], param_l[p]]
        value -= 0.5 * d * d * inv_var_alpha
        if want_derivatives:
            grad[p] -= d * inv_var_alpha
            hess[p, p] -= inv_var_alpha
    return value


@kernel(inline="always")
def _cholesky_solve(A, rhs, out, block):
    """Solve A x = rhs for symmetric positive definite A made of diagonal blocks of size
    ``block`` (rows of the confusion matrix are independent unless --symmetric).  Destroys A;
    returns False if A is not positive definite."""
    n = rhs.size
    for j in range(n):
        first = (j // block) * block
        last = first + block
        s = A[j, j]
        for k in range(first, j):
            s -= A[j, k] * A[j, k]
        if s <= 0.0:
            return False
        A[j, j] = math.sqrt(s)
        for i in range(j + 1, last):
            s = A[i, j]
            for k in range(first, j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / A[j, j]
    for i in range(n):
        s = rhs[i]
        for k in range((i // block) * block, i):
            s -= A[i, k] * out[k]
        out[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, (i // block) * block + block):
            s -= A[k, i] * out[k]
        out[i] = s / A[i, i]
    return True


@kernel(inline="always")
def _set_param(alpha, m, p, value, param_k, param_l, symmetric):
    alpha[m, param_k[p], param_l[p]] = value
    if symmetric:
        alpha[m, param_l[p], param_k[p]] = value


@kernel(parallel=True)
def alpha_step(alpha, mu, obs_start, obs_row, obs_label, weights, betas, cell_param, param_k,
               param_l, symmetric, sigma_alpha, newton_iters):
    """SPEC §E.3 step 2: Newton with backtracking on each used slot's concave objective.

    Slot m's observations are ``obs_start[m]:obs_start[m+1]``; observation o is a label with a
    weight row ``weights[obs_row[o]]`` (q of the item, or summed q when every beta is equal) and
    ``betas[obs_row[o]]``.  Returns the objective gain summed over slots (never negative).
    """
    M = alpha.shape[0]
    P = param_k.size
    block = P if symmetric else alpha.shape[1] - 1
    inv_var = 1.0 / (sigma_alpha * sigma_alpha)
    gains = np.zeros(M)
    for m in prange(M):
        s, e = obs_start[m], obs_start[m + 1]
        if s == e:
            continue
        grad = np.empty(P)
        hess = np.empty((P, P))
        step = np.empty(P)
        old = np.empty(P)
        value = _slot_objective(alpha, mu, m, s, e, obs_row, obs_label, weights, betas,
                                cell_param, param_k, param_l, inv_var, grad, hess, True)
        start_value = value
        for it in range(newton_iters):
            if it > 0:
                value = _slot_objective(alpha, mu, m, s, e, obs_row, obs_label, weights, betas,
                                        cell_param, param_k, param_l, inv_var, grad, hess, True)
            for p in range(P):
                for p2 in range(P):
                    hess[p, p2] = -hess[p, p2]
            if not _cholesky_solve(hess, grad, step, block):
                for p in range(P):
                    step[p] = grad[p] * sigma_alpha * sigma_alpha
            for p in range(P):
                old[p] = alpha[m, param_k[p], param_l[p]]
            largest = 0.0
            decrement = 0.0
            for p in range(P):
                largest = max(largest, abs(step[p]))
                decrement += grad[p] * step[p]
            if largest < 1e-12 or decrement < RESOLUTION * max(1.0, abs(value)):
                break
            accepted = False
            scale = 1.0
            for _ in range(HALVINGS):
                for p in range(P):
                    _set_param(alpha, m, p, old[p] + scale * step[p], param_k, param_l, symmetric)
                candidate = _slot_objective(alpha, mu, m, s, e, obs_row, obs_label, weights,
                                            betas, cell_param, param_k, param_l, inv_var, grad,
                                            hess, False)
                if candidate >= value:
                    accepted = True
                    value = candidate
                    break
                scale *= 0.5
                if scale * largest < 1e-12:
                    break
            if not accepted:
                for p in range(P):
                    _set_param(alpha, m, p, old[p], param_k, param_l, symmetric)
                break
            if largest * scale < 1e-10:
                break
        gains[m] = value - start_value
    return gains.sum()


@kernel(inline="always")
def _row_value(alpha, mu, m, k, counts, beta, inv_var, scratch):
    """One confusion row's objective from its answer counts (every beta equal)."""
    K = alpha.shape[1]
    log_total = _row_softmax(alpha, m, k, beta, scratch)
    linear = 0.0
    n = 0.0
    prior = 0.0
    for l in range(K):
        linear += counts[l] * beta * alpha[m, k, l]
        n += counts[l]
        if l != k:
            d = alpha[m, k, l] - mu[k, l]
            prior += d * d
    return linear - n * log_total - 0.5 * prior * inv_var


@kernel(inline="always")
def _rank_one_solve(probs, k, n_beta2, inv_var, grad, step):
    """Solve H x = grad for a row's negated Hessian over its free cells l != k,
    ``H = diag(n_beta2 p_l + inv_var) - n_beta2 p p^T``, by Sherman-Morrison: O(K), not the
    O(K^3) of a Cholesky factorisation (K = 300 labels made that 9 million steps a row).
    Sherman-Morrison's denominator ``1 - n_beta2 sum_l p_l^2 / (n_beta2 p_l + inv_var)`` is
    summed in its cancellation-free form ``p_k + sum_l p_l inv_var / (n_beta2 p_l + inv_var)``;
    where even that underflows to 0 (logits near the file format's 1e100 bound) the step is the
    gradient scaled by the prior variance, as :func:`alpha_step` falls back, and the caller's
    backtracking keeps it an ascent."""
    K = probs.size
    d_grad = 0.0
    denominator = probs[k]
    for l in range(K):
        if l == k:
            step[l] = 0.0
            continue
        inverse = 1.0 / (n_beta2 * probs[l] + inv_var)
        step[l] = grad[l] * inverse
        d_grad += probs[l] * step[l]
        denominator += probs[l] * inv_var * inverse
    if not denominator > 0.0:
        for l in range(K):
            step[l] = grad[l] / inv_var
        return
    scale = n_beta2 * d_grad / denominator
    for l in range(K):
        if l != k:
            step[l] += scale * probs[l] / (n_beta2 * probs[l] + inv_var)


@kernel(inline="always")
def _row_newton(alpha, mu, m, k, counts, beta, inv_var, newton_iters, probs, grad, hess, step,
                old, rank_one=False):
    """Newton with backtracking on row (m, k)'s concave objective in its answer counts
    ``counts[l]`` (every beta equal, rows untied): at most ``newton_iters`` steps, each solved
    by Cholesky or, with ``rank_one``, by :func:`_rank_one_solve` (the same step up to
    rounding).  Returns the largest change of a cell."""
    K = alpha.shape[1]
    n = 0.0
    for l in range(K):
        n += counts[l]
    moved = 0.0
    value = _row_value(alpha, mu, m, k, counts, beta, inv_var, probs)
    for _ in range(newton_iters):
        _row_softmax(alpha, m, k, beta, probs)
        # the pinned diagonal keeps its row and column as an identity: step 0 there
        for l in range(K):
            if l == k:
                grad[l] = 0.0
                if not rank_one:
                    for l2 in range(K):
                        hess[l, l2] = 1.0 if l2 == l else 0.0
                continue
            grad[l] = (beta * (counts[l] - n * probs[l])
                       - (alpha[m, k, l] - mu[k, l]) * inv_var)
            if rank_one:
                continue
            for l2 in range(K):
                if l2 == k:
                    hess[l, l2] = 0.0
                else:
                    hess[l, l2] = n * beta * beta * (
                        (probs[l] if l == l2 else 0.0) - probs[l] * probs[l2])
            hess[l, l] += inv_var
        if rank_one:
            _rank_one_solve(probs, k, n * beta * beta, inv_var, grad, step)
        else:
            _cholesky_solve(hess, grad, step, K)
        decrement = 0.0
        for l in range(K):
            decrement += grad[l] * step[l]
            old[l] = alpha[m, k, l]
        if decrement < RESOLUTION * max(1.0, abs(value)):
            break
        scale = 1.0
        accepted = False
        for _ in range(HALVINGS):
            for l in range(K):
                alpha[m, k, l] = old[l] + scale * step[l]
            candidate = _row_value(alpha, mu, m, k, counts, beta, inv_var, probs)
            if candidate >= value:
                value = candidate
                accepted = True
                break
            scale *= 0.5
        if not accepted:
            for l in range(K):
                alpha[m, k, l] = old[l]
            break
        for l in range(K):
            moved = max(moved, abs(alpha[m, k, l] - old[l]))
    return moved


@kernel(parallel=True)
def alpha_rows_step(alpha, mu, label_sums, used, beta, sigma_alpha, newton_iters, rank_one):
    """SPEC §E.3 step 2 when every beta is equal and the rows are untied (no --symmetric).

    Each row (slot m, truth k) is then its own (K-1)-dimensional concave problem in the answer
    counts ``label_sums[m, l, k]`` (batch EM's sums, online EM's statistics): Newton with
    backtracking, to convergence; each step by Cholesky, or with ``rank_one`` in O(K)
    (:func:`_rank_one_solve`).
    """
    M, K, _ = alpha.shape
    inv_var = 1.0 / (sigma_alpha * sigma_alpha)
    for m in prange(M):
        if not used[m]:
            continue
        counts = np.empty(K)
        probs = np.empty(K)
        grad = np.empty(K)
        hess = np.empty((0, 0)) if rank_one else np.empty((K, K))
        step = np.empty(K)
        old = np.empty(K)
        for k in range(K):
            for l in range(K):
                counts[l] = label_sums[m, l, k]
            _row_newton(alpha, mu, m, k, counts, beta, inv_var, newton_iters, probs, grad, hess,
                        step, old, rank_one)


@kernel
def prior_log_density(alpha, mu, nu, used, param_k, param_l, sigma_alpha, sigma_mu):
    """log P(alpha, gamma) of SPEC §E.2 over the used slots (unused ones sit at mu: zero)."""
    total = 0.0
    inv_alpha = 1.0 / (sigma_alpha * sigma_alpha)
    for m in range(alpha.shape[0]):
        if not used[m]:
            continue
        for p in range(param_k.size):
            d = alpha[m, param_k[p], param_l[p]] - mu[param_k[p], param_l[p]]
            total -= 0.5 * d * d * inv_alpha
    if sigma_mu > 0.0:
        inv_mu = 1.0 / (sigma_mu * sigma_mu)
        for p in range(param_k.size):
            d = mu[param_k[p], param_l[p]] - nu[param_k[p], param_l[p]]
            total -= 0.5 * d * d * inv_mu
    return total


@kernel
def decay_fraction(s, t, eta0, rho, t0, n_items, sigma_alpha):
    """1 - epsilon(s, t) of SPEC §E.6, in the stable form (no branch at rho = 1)."""
    if t <= s:
        return 0.0
    rate = eta0 / (n_items * sigma_alpha * sigma_alpha)
    base = s + t0
    if base <= 0.0:
        if rho >= 1.0:
            return 1.0  # the integral diverges: the slot snaps to mu (SPEC §E.6 [E1e])
        integral = (t + t0) ** (1.0 - rho) / (1.0 - rho)
    else:
        L = math.log1p((t - s) / base)
        z = (1.0 - rho) * L
        phi = 1.0 if z == 0.0 else math.expm1(z) / z
        integral = base ** (1.0 - rho) * L * phi
    return -math.expm1(-rate * integral)


NO_STEP = np.zeros((0, 0))


@kernel(inline="always")
def _move_slot(alpha, mu, m, fraction, step, mu_share, symmetric):
    """Move slot m's free cells ``fraction`` of the way to mu, then by ``step`` (a tied pair moves
    by the sum of its two cells); each change propagates to the hypermean (SPEC §E.6)."""
    K = alpha.shape[1]
    for k in range(K):
        for l in range(K):
            if l == k or (symmetric and l < k):
                continue
            delta = fraction * (mu[k, l] - alpha[m, k, l])
            if step.shape[0] > 0:
                delta += step[k, l] + step[l, k] if symmetric else step[k, l]
            alpha[m, k, l] += delta
            mu[k, l] += delta * mu_share
            if symmetric:
                alpha[m, l, k] = alpha[m, k, l]
                mu[l, k] = mu[k, l]


@kernel
def catch_up(alpha, mu, m, stamp, t, eta0, rho, t0, n_items, sigma_alpha, mu_share, symmetric):
    """Apply the prior decay slot m missed since its last write, propagating each change to mu."""
    fraction = decay_fraction(float(stamp[m]), float(t), eta0, rho, t0, n_items, sigma_alpha)
    stamp[m] = t
    if fraction != 0.0:
        _move_slot(alpha, mu, m, fraction, NO_STEP, mu_share, symmetric)


@kernel
def online_em(alpha, mu, stamp, t_start, item_start, rating_slot, rating_label, gold, log_prior,
              theta, learn_prior, base_log_prior, eta0, rho, t0, n_items, kappa, sigma_b,
              sigma_alpha, mu_share, symmetric, test_only, q_out, b_out, f_out):
    """SPEC §E.4 over a run of item blocks in stream order; returns the new item counter t.

    ``q_out``, ``b_out`` and ``f_out`` (= F-hat_i / n_i, the progressive-validation value) receive
    each item's results.  ``log_prior`` is updated in place when ``learn_prior``.
    """
    K = alpha.shape[1]
    t = t_start
    LL = np.empty(K)
    D1 = np.empty(K)
    D2 = np.empty(K)
    probs = np.empty(K)
    longest = 0
    for i in range(item_start.size - 1):
        longest = max(longest, item_start[i + 1] - item_start[i])
    deltas = np.empty((longest, K, K))
    rating_probs = np.empty((longest, K, K))
    for i in range(item_start.size - 1):
        start, end = item_start[i], item_start[i + 1]
        t += 1
        eta = eta0 * (t0 + t) ** (-rho)
        if not test_only:
            for r in range(start, end):
                m = rating_slot[r]
                if stamp[m] != t:
                    catch_up(alpha, mu, m, stamp, t, eta0, rho, t0, n_items, sigma_alpha,
                             mu_share, symmetric)
        q = q_out[i]
        b, _, value = item_inner_em(alpha, start, end, rating_slot, rating_label, K, log_prior,
                                    gold[i], kappa, kappa, sigma_b, 50, q, LL, D1, D2,
                                    rating_probs)
        b_out[i] = b
        f_out[i] = value / (end - start)
        if test_only:
            continue
        beta = math.exp(b)
        for j in range(end - start):  # the gradient at the pre-update alpha, from the E-step
            label = rating_label[start + j]
            for k in range(K):
                scale = eta * q[k] * beta
                for l in range(K):
                    indicator = 1.0 if l == label else 0.0
                    deltas[j, k, l] = 0.0 if l == k else scale * (indicator - rating_probs[j, k, l])
        # one move per slot: a worker's repeated answers to this item (or workers sharing a
        # hashed slot) add up, but move the slot at most as far as one answer can (eta*beta per
        # cell); 70,000 answers of one worker on one item stepped 70,000 times and flipped it
        order = np.argsort(rating_slot[start:end], kind="mergesort")
        j = 0
        while j < end - start:
            m = rating_slot[start + order[j]]
            total = deltas[order[j]]
            last = j + 1
            while last < end - start and rating_slot[start + order[last]] == m:
                total += deltas[order[last]]
                last += 1
            if last > j + 1:
                largest = np.abs(total).max()
                if largest > eta * beta:
                    total *= eta * beta / largest
            _move_slot(alpha, mu, m, 0.0, total, mu_share, symmetric)
            stamp[m] = t
            j = last
        if learn_prior and gold[i] < 0:
            softmax_into(theta, probs)
            for k in range(K):
                theta[k] += eta * (q[k] - probs[k] + (base_log_prior[k] - theta[k]) / n_items)
            log_total = softmax_into(theta, probs)
            for k in range(K):
                log_prior[k] = theta[k] - log_total
    return t


@kernel
def catch_up_all(alpha, mu, stamp, t, eta0, rho, t0, n_items, sigma_alpha, mu_share, symmetric):
    """End of stream: bring every written slot up to t (untouched slots stay at nu)."""
    for m in range(alpha.shape[0]):
        if 0 < stamp[m] < t:
            catch_up(alpha, mu, m, stamp, t, eta0, rho, t0, n_items, sigma_alpha, mu_share,
                     symmetric)


@kernel(inline="always")
def _theta_value(theta, counts, n_free, base):
    top = theta.max()
    total = 0.0
    for k in range(theta.size):
        total += math.exp(theta[k] - top)
    value = -n_free * (top + math.log(total))
    for k in range(theta.size):
        value += counts[k] * theta[k] - 0.5 * (theta[k] - base[k]) ** 2
    return value


@kernel
def theta_newton(theta, counts, n_free, base, iters):
    """The class-prior logits' M-step: Newton with backtracking on
    ``counts . theta - n_free log sum exp(theta) - |theta - base|^2 / 2`` (batch EM's
    ``_theta_step``), at most ``iters`` steps, in place."""
    K = theta.size
    soft = np.empty(K)
    grad = np.empty(K)
    hess = np.empty((K, K))
    step = np.empty(K)
    old = np.empty(K)
    value = _theta_value(theta, counts, n_free, base)
    for _ in range(iters):
        softmax_into(theta, soft)
        for k in range(K):
            grad[k] = counts[k] - n_free * soft[k] - (theta[k] - base[k])
            for k2 in range(K):
                hess[k, k2] = n_free * ((soft[k] if k == k2 else 0.0) - soft[k] * soft[k2])
            hess[k, k] += 1.0
        if not _cholesky_solve(hess, grad, step, K):
            return
        decrement = 0.0
        for k in range(K):
            decrement += grad[k] * step[k]
            old[k] = theta[k]
        if decrement < RESOLUTION * max(1.0, abs(value)):
            return
        scale = 1.0
        accepted = False
        for _ in range(HALVINGS):
            for k in range(K):
                theta[k] = old[k] + scale * step[k]
            candidate = _theta_value(theta, counts, n_free, base)
            if candidate >= value:
                value = candidate
                accepted = True
                break
            scale *= 0.5
        if not accepted:
            for k in range(K):
                theta[k] = old[k]
            return


@kernel
def incremental_em(alpha, mu, nu, stats, class_mass, stamp, t_start,
                   item_start, rating_slot, rating_label, gold, theta, learn_prior,
                   base_log_prior, beta, sigma_alpha, sigma_mu, newton_iters, m_step, test_only,
                   q_io, f_out):
    """Online EM on sufficient statistics (incremental EM, Neal & Hinton 1998) over a run of
    item blocks in stream order, every beta equal and rows untied; returns the new item
    counter.

    The statistics are what batch EM's M-step reads: ``stats[m, l, k]``, the posterior mass of
    truth k over slot m's answers l, and ``class_mass``, the summed posteriors of the items
    without gold.  Item i's E-step uses the current parameters; its new posterior replaces the
    one it contributed before (``q_io[i]``: 0 on a first pass, the last pass's after), so the
    statistics always hold each item once.  Then the M-step where they changed: a few Newton
    steps on each row of the item's slots (``_row_newton``, batch EM's row step), the
    hypermean over the used slots in closed form (batch EM's), and the class prior
    (``theta_newton``).  Each step raises the same objective batch EM climbs (EM's free
    energy, coordinate by coordinate), so passes over a file approach batch EM's fixed point;
    a first pass is the sequential posterior of the items so far, with no step size to tune
    and nothing to overshoot.  ``f_out`` receives F-hat_i / n_i at the E-step (progressive
    validation).  Without ``m_step`` only the statistics move (the parameters stay).  A slot
    is used once an item has stepped it (``stamp[m]``, that item's t, is
    above 0); unused slots stay at nu."""
    K = alpha.shape[1]
    t = t_start
    alpha_sum = np.zeros((K, K))  # over the used slots, for the hypermean
    n_used = 0.0
    for m in range(alpha.shape[0]):
        if stamp[m] > 0:
            n_used += 1.0
            for k in range(K):
                for l in range(K):
                    alpha_sum[k, l] += alpha[m, k, l]
    inv_alpha = 1.0 / (sigma_alpha * sigma_alpha)
    inv_mu = 1.0 / (sigma_mu * sigma_mu) if sigma_mu > 0.0 else 0.0
    LL = np.empty(K)
    q = np.empty(K)
    log_prior = np.empty(K)
    scratch = np.empty(K)
    counts = np.empty(K)
    grad = np.empty(K)
    hess = np.empty((0, 0))  # the rank-one solve needs no Hessian
    step = np.empty(K)
    old = np.empty(K)
    before = np.empty(K)
    log_total = softmax_into(theta, log_prior)
    for k in range(K):
        log_prior[k] = theta[k] - log_total
    for i in range(item_start.size - 1):
        start, end = item_start[i], item_start[i + 1]
        t += 1
        for k in range(K):
            LL[k] = 0.0
        for r in range(start, end):
            m = rating_slot[r]
            label = rating_label[r]
            for k in range(K):
                LL[k] += beta * alpha[m, k, label] - _row_softmax(alpha, m, k, beta, scratch)
        value = _posterior(LL, log_prior, gold[i], K, q)
        f_out[i] = value / max(end - start, 1)
        if test_only:
            for k in range(K):
                q_io[i, k] = q[k]
            continue
        for r in range(start, end):
            m = rating_slot[r]
            label = rating_label[r]
            for k in range(K):
                stats[m, label, k] = max(stats[m, label, k] + q[k] - q_io[i, k], 0.0)
        if gold[i] < 0:
            for k in range(K):
                class_mass[k] = max(class_mass[k] + q[k] - q_io[i, k], 0.0)
        for k in range(K):
            q_io[i, k] = q[k]
        if not m_step:  # statistics only (the warm-up pass): the slots are used from now on
            for r in range(start, end):
                stamp[rating_slot[r]] = t
            continue
        for r in range(start, end):
            m = rating_slot[r]
            if stamp[m] == t:
                continue  # this item has stepped the slot already
            if stamp[m] == 0:
                n_used += 1.0
                for k in range(K):
                    for l in range(K):
                        alpha_sum[k, l] += alpha[m, k, l]
            for k in range(K):
                for l in range(K):
                    counts[l] = stats[m, l, k]
                    before[l] = alpha[m, k, l]
                _row_newton(alpha, mu, m, k, counts, beta, inv_alpha, newton_iters, scratch,
                            grad, hess, step, old, True)
                for l in range(K):
                    alpha_sum[k, l] += alpha[m, k, l] - before[l]
            stamp[m] = t
        if inv_mu > 0.0:
            for k in range(K):
                for l in range(K):
                    if l != k:
                        mu[k, l] = ((nu[k, l] * inv_mu + alpha_sum[k, l] * inv_alpha)
                                    / (inv_mu + n_used * inv_alpha))
        if learn_prior and gold[i] < 0:
            n_free = 0.0
            for k in range(K):
                n_free += class_mass[k]
            theta_newton(theta, class_mass, n_free, base_log_prior, 1)
            log_total = softmax_into(theta, log_prior)
            for k in range(K):
                log_prior[k] = theta[k] - log_total
    return t
