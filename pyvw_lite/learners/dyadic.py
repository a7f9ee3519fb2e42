"""Numerics of the dyadic (low-rank rater × task) learner: SPEC §B and §C.

Along the gradient flow of the prediction, every parameter follows a closed-form curve in the
flow coordinate ``s`` (SPEC §B.2); an example is summarised by its current prediction ``p0``,
the linear sensitivity ``X`` and, per dyad ``m``, ``(U_m, V_m, r_m)`` (§B.3), so that

    p(s) = p0 - sX + ¼ Σ_m (U_m expm1(-2 r_m s) - V_m expm1(2 r_m s)).

On top of it: the inverse ``p⁻¹(y)`` (§B.4), the exact hinge step (§B.5), the logistic and
squared steps by an adaptive one-dimensional RK4 (§B.6), ``h_min`` (§C.1-C.2) and the active
learner's query probability (§C.4).  Sign convention (§0.2): ``s > 0`` lowers ``p``.
"""
from __future__ import annotations

import math

import numpy as np

from ..jit import kernel
from .losses import HINGE, SQUARED, loss_slope

EXP_CAP = 700.0  # exponent arguments are clamped here (SPEC §B.2): no inf - inf, no 0·inf
UNREACHABLE = 1
# the active sampler's running state (SPEC §C.4), one float64 vector
SAMPLER_SEEN, SAMPLER_QUERIED, SAMPLER_ERRORS, SAMPLER_QUERIES, SAMPLER_LOW, SAMPLER_HIGH = range(6)
SAMPLER_SIZE = 6


@kernel(inline="always")
def dyad_terms(a, b, row, ca, cb):
    """``(U, V, r)`` of one dyad from its effective latent vectors ``ã = a[row]``, ``b̃ = b[row]``
    and the squared norms ``c_a``, ``c_b`` of its namespaces' feature values (SPEC §B.3).  ``U``
    and ``V`` are summed from the vectors themselves, never from ``|a|² + |b|² ± 2a·b`` (which
    cancels).  (Rows of 2-D buffers, not 1-D views: a view costs an atomic reference count.)"""
    r = math.sqrt(ca * cb)
    sa = 1.0 / math.sqrt(ca)
    sb = 1.0 / math.sqrt(cb)
    U = 0.0
    V = 0.0
    for i in range(a.shape[1]):
        plus = a[row, i] * sa + b[row, i] * sb
        minus = a[row, i] * sa - b[row, i] * sb
        U += plus * plus
        V += minus * minus
    return r * U, r * V, r


@kernel(inline="always")
def _expm1_capped(z):
    return math.expm1(min(z, EXP_CAP))


@kernel(inline="always")
def expm1_pair(x):
    """``(expm1(-x), expm1(x))``, each argument clamped at EXP_CAP, from one ``expm1``.  With
    ``E = expm1(|x|)``, ``expm1(-|x|) = −E/(1 + E)``: a quotient of accurately computed numbers
    with ``1 + E = e^|x| ≥ 1`` (no cancellation), so it keeps ``E``'s relative accuracy (a few
    ulp) at half the cost of a second ``expm1``."""
    z = abs(x)
    if z > EXP_CAP:
        return _expm1_capped(-x), _expm1_capped(x)
    big = math.expm1(z)
    small = -big / (1.0 + big)
    return (small, big) if x >= 0.0 else (big, small)


@kernel(inline="always")
def _dyad_sums(s, U, V, r, derivative):
    """``¼ Σ (U expm1(-2rs) − V expm1(2rs))``, the dyads' part of ``p(s)``, or with
    ``derivative`` ``½ Σ r (U e^{-2rs} + V e^{2rs})``, their part of ``−p'(s)``.
    Zero-coefficient dyads are skipped, and a dyad with the rate of the previous one (a
    scoring-filter-tree match: both competitors' dyads) reuses its exponentials."""
    total = 0.0
    last = -1.0
    down = 0.0
    up = 0.0
    for m in range(U.shape[0]):
        if U[m] == 0.0 and V[m] == 0.0:
            continue
        if r[m] != last:
            down, up = expm1_pair(2.0 * r[m] * s)
            last = r[m]
        if derivative:
            total += 0.5 * r[m] * (U[m] * (1.0 + down) + V[m] * (1.0 + up))
        else:
            total += 0.25 * (U[m] * down - V[m] * up)
    return total


@kernel(inline="always")
def p_of_s(p0, s, X, U, V, r):
    """``p(s)`` in the stable U/V form (SPEC §B.3)."""
    return p0 - s * X + _dyad_sums(s, U, V, r, False)


@kernel(inline="always")
def dp_ds(s, X, U, V, r):
    """``p'(s) = -X - ½ Σ r (U e^{-2rs} + V e^{2rs})`` (always < 0 when anything moves)."""
    return -X - _dyad_sums(s, U, V, r, True)


@kernel(_nrt=False, error_model="numpy")
def p_inverse(p0, y, X, U, V, r):
    """``s`` with ``p(s) = y`` (SPEC §B.4): ``(s, status)``, status 1 = unreachable (s = ±inf).

    Existence from the limits of ``p``; then bracketing by doubling and Newton with
    backtracking inside the bracket (``p`` has an inflection point where plain Newton would
    overshoot into the exponential region), bisection as the fallback.
    """
    g0 = p0 - y
    if g0 == 0.0:
        return 0.0, 0
    grows_up = X > 0.0  # p -> +inf as s -> -inf
    grows_down = X > 0.0  # p -> -inf as s -> +inf
    flat = p0
    for m in range(U.shape[0]):
        if U[m] > 0.0:
            grows_up = True
        if V[m] > 0.0:
            grows_down = True
        flat -= 0.25 * (U[m] - V[m])
    direction = 1.0 if g0 > 0.0 else -1.0
    if (direction < 0.0 and not grows_up and y >= flat) or \
            (direction > 0.0 and not grows_down and y <= flat):
        return direction * math.inf, UNREACHABLE
    near = 0.0
    far = direction
    while True:
        g = p_of_s(p0, far, X, U, V, r) - y
        if g * g0 <= 0.0:
            break
        near = far
        far *= 2.0
        if abs(far) > 2.0 ** 20:
            return direction * math.inf, UNREACHABLE
    lo = min(near, far)
    hi = max(near, far)
    s = near
    g = p_of_s(p0, s, X, U, V, r) - y
    tolerance = 1e-12 * max(1.0, abs(y))
    for _ in range(200):
        if abs(g) <= tolerance:
            return s, 0
        step = -g / dp_ds(s, X, U, V, r)
        t = 1.0
        accepted = False
        candidate = s
        value = g
        while t >= 1e-6:
            candidate = s + t * step
            if lo < candidate < hi:
                value = p_of_s(p0, candidate, X, U, V, r) - y
                if math.isfinite(value) and abs(value) < abs(g):
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            candidate = 0.5 * (lo + hi)
            value = p_of_s(p0, candidate, X, U, V, r) - y
        if value > 0.0:  # g decreases in s
            lo = max(lo, candidate)
        else:
            hi = min(hi, candidate)
        s = candidate
        g = value
        if hi - lo <= 4e-16 * max(1.0, abs(s)):
            return s, 0
    return s, 0


@kernel(_nrt=False, error_model="numpy")
def hinge_step(p0, y, X, U, V, r, eta, h):
    """Exact hinge update (SPEC §B.5): move at speed ``η`` until ``y·p = 1`` or ``ηh`` runs out."""
    if y * p0 >= 1.0 or eta * h <= 0.0:
        return 0.0
    target, status = p_inverse(p0, y, X, U, V, r)
    reach = math.inf if status == UNREACHABLE else abs(target)
    return -y * min(eta * h, reach)


@kernel(_nrt=False, error_model="numpy")
def quantile_step(p0, y, tau, X, U, V, r, eta, h):
    """Exact quantile update: ``l'`` is ``−τ`` below the label and ``1−τ`` above it, so the flow
    moves ``p`` towards ``y`` at speed ``τ·η`` (or ``(1−τ)·η``) until it lands on ``y`` or ``ηh``
    runs out, as :func:`hinge_step` stops at the margin."""
    if p0 == y or eta * h <= 0.0:
        return 0.0
    direction = 1.0 if y > p0 else -1.0
    speed = tau if direction > 0.0 else 1.0 - tau
    target, status = p_inverse(p0, y, X, U, V, r)
    reach = math.inf if status == UNREACHABLE else abs(target)
    return -direction * min(eta * h * speed, reach)


@kernel(inline="always")
def _slope(loss, p, y):
    return loss_slope(loss, p, y, 0.5)  # the flow's losses: squared and (hard) logistic


@kernel(inline="always")
def _flow(loss, s, p0, y, X, U, V, r):
    return _slope(loss, p_of_s(p0, s, X, U, V, r), y)


@kernel(inline="always")
def _doubling(loss, s, k1, step, p0, y, X, U, V, r):
    """``(full, half)``: one classical RK4 step of size ``step`` from ``s`` and two of size
    ``step/2``, given ``k1 = F(s)`` (the full and the first half step share it).  The ten other
    slopes are taken in one loop, so ``F`` is inlined once instead of ten times; each sum and
    point is formed in the usual order (``s + step·(k1 + 2k2 + 2k3 + k4)/6``)."""
    full = 0.0
    half = 0.0
    run = 0  # 0: the full step, 1 and 2: the half steps
    width = step
    base = s
    total = k1
    previous = k1
    stage = 1  # the slope being taken: k1 (0, second half step only) .. k4 (3)
    for _ in range(10):
        if stage == 0:
            point = base
        elif stage == 3:
            point = base + width * previous
        else:
            point = base + 0.5 * width * previous
        k = _flow(loss, point, p0, y, X, U, V, r)
        if stage == 0:
            total = k
        elif stage == 3:
            total += k
        else:
            total += 2.0 * k
        previous = k
        if stage < 3:
            stage += 1
            continue
        value = base + width * total / 6.0
        if run == 0:
            full = value
            width = 0.5 * step
            total = k1
            previous = k1
            stage = 1
        elif run == 1:
            base = value
            stage = 0
        else:
            half = value
        run += 1
    return full, half


@kernel(_nrt=False, error_model="numpy")
def _rk4_attempt(loss, s, step, p0, y, X, U, V, r, rtol, atol, total):
    """One step-doubling attempt of SPEC §B.6's RK4 from ``s``: ``(s_new, accepted, next
    step)``; an accepted step is locally extrapolated.  A call of its own (not inlined): the
    solver is not the default, and inlining it cost the dyadic loops' cold compile seconds."""
    full, half = _doubling(loss, s, _flow(loss, s, p0, y, X, U, V, r), step, p0, y, X, U, V, r)
    error = abs(half - full) / 15.0
    scale = atol + rtol * max(abs(s), abs(half))
    if error <= scale or step <= 1e-14 * max(1.0, total):
        grow = 5.0 if error == 0.0 else min(5.0, max(0.2, 0.9 * (scale / error) ** 0.2))
        return half + (half - full) / 15.0, True, step * grow
    return s, False, step * max(0.2, 0.9 * (scale / error) ** 0.25)


RK4, TAYLOR = 0, 1  # the flow's solvers (--ode_solver)
SERIES_ORDER = 16  # degree of the Taylor polynomial of s(τ) taken per step
# rows of the Taylor solver's scratch: the distinct rates and their ¼ΣU, ¼ΣV; the series of s,
# of k·s_k, of p and (logistic) of z = e^{±yp}, w = 1/(1 + z); then per rate the series of
# ¼ΣU e^{-2rs} and ¼ΣV e^{2rs}
_RATE, _DOWN, _UP, _S, _KS, _P, _Z, _W, _EXPS = range(9)
# 1/k for the series' recurrences (a division per term was the solver's slowest instruction)
_INVERSE = np.array([0.0] + [1.0 / k for k in range(1, SERIES_ORDER + 2)])


@kernel
def series_scratch(n_dyads):
    """Scratch for :func:`solve_flow`'s Taylor solver with up to ``n_dyads`` dyads."""
    return np.zeros((_EXPS + 2 * n_dyads, max(SERIES_ORDER + 1, n_dyads)))


@kernel(inline="always")
def _distinct_rates(U, V, r, series):
    """Gathers the dyads by rate (a scoring-filter-tree match has both competitors' dyads at one
    rate): rate, ¼ΣU and ¼ΣV per distinct rate into ``series``; returns their number."""
    count = 0
    for m in range(U.shape[0]):
        if U[m] == 0.0 and V[m] == 0.0:
            continue
        if count == 0 or r[m] != series[_RATE, count - 1]:
            series[_RATE, count] = r[m]
            series[_DOWN, count] = 0.0
            series[_UP, count] = 0.0
            count += 1
        series[_DOWN, count - 1] += 0.25 * U[m]
        series[_UP, count - 1] += 0.25 * V[m]
    return count


@kernel(inline="always")
def _taylor_advance(loss, s, p, room, y, X, rtol, atol, series, rates):
    """One Taylor step of the flow from ``s`` (where the prediction is ``p``): ``(s_new,
    width)``, ``width ≤ room``.

    The coefficients of ``s(τ) = Σ s_k τ^k`` come from ``s_{k+1} = F_k/(k+1)``, where ``F_k``, the
    coefficients of ``l'(p(s(τ)), y)``, follow from those of ``p``: each exponential
    ``E = c·e^{βs}`` obeys ``k E_k = β Σ_j j s_j E_{k−j}``, and (logistic) ``w = 1/(1 + z)`` obeys
    ``w_k = −w_0 Σ_{j≥1} z_j w_{k−j}``.  The step keeps the last two terms under
    ``max(atol, rtol·|s_1|·width)``: within the tolerance relative to the step's own move
    (the whole ``room`` when it passes, as it mostly does; else the largest width that does).
    """
    n = SERIES_ORDER
    squared = loss == SQUARED
    series[_S, 0] = s
    series[_P, 0] = p
    for q in range(rates):
        down, up = (0.0, 0.0) if s == 0.0 else expm1_pair(2.0 * series[_RATE, q] * s)
        series[_EXPS + 2 * q, 0] = series[_DOWN, q] * (1.0 + down)
        series[_EXPS + 2 * q + 1, 0] = series[_UP, q] * (1.0 + up)
    # logistic: l' = −y/(1 + e^{yp}); expanded through e^{−yp} instead when yp > 0 (no overflow)
    flip = -1.0 if y * series[_P, 0] > 0.0 else 1.0
    if not squared:
        series[_Z, 0] = math.exp(flip * y * series[_P, 0])
        series[_W, 0] = 1.0 / (1.0 + series[_Z, 0])
    # the whole room is one step once two successive terms fit the tolerance there: the
    # series stops at that degree (a gentle update needs far fewer than n terms)
    tolerance = 0.0
    term = 1.0  # room^k
    order = n
    fits = False  # the whole room passes the tolerance test at degree ``order``
    for k in range(n):
        if squared:
            slope = 2.0 * (series[_P, 0] - y) if k == 0 else 2.0 * series[_P, k]
        else:
            if k > 0:
                total = 0.0
                for j in range(1, k + 1):
                    total += j * series[_P, j] * series[_Z, k - j]
                series[_Z, k] = flip * y * total * _INVERSE[k]
                total = 0.0
                for j in range(1, k + 1):
                    total += series[_Z, j] * series[_W, k - j]
                series[_W, k] = -total * series[_W, 0]
            if flip > 0.0:
                slope = -y * series[_W, k]
            else:  # −y·z/(1 + z) = −y·(1 − w)
                slope = -y * (series[_Z, 0] * series[_W, 0] if k == 0 else -series[_W, k])
        kk = k + 1
        series[_S, kk] = slope * _INVERSE[kk]
        series[_KS, kk] = slope
        if kk == 1:
            tolerance = max(atol, rtol * abs(series[_S, 1]) * room)
        last = abs(series[_S, kk - 1]) * term if kk > 1 else math.inf
        term *= room
        if kk >= 4 and max(last, abs(series[_S, kk]) * term) <= tolerance:
            order = kk
            fits = True
            break
        dp = -X * series[_S, kk]
        for q in range(rates):
            beta = 2.0 * series[_RATE, q] * _INVERSE[kk]
            row = _EXPS + 2 * q  # ¼ΣU e^{-2rs}, then ¼ΣV e^{2rs}
            total_down = 0.0
            total_up = 0.0
            for j in range(1, kk + 1):
                total_down += series[_KS, j] * series[row, kk - j]
                total_up += series[_KS, j] * series[row + 1, kk - j]
            series[row, kk] = -beta * total_down
            series[row + 1, kk] = beta * total_up
            dp += series[row, kk] - series[row + 1, kk]
        series[_P, kk] = dp
    width = room
    relative = rtol * abs(series[_S, 1])
    if not fits:  # the largest width at which the last two terms pass
        for k in range(n - 1, n + 1):
            size = abs(series[_S, k])
            if size > 0.0:
                allowed = (atol / size) ** (1.0 / k)
                if relative > 0.0:
                    allowed = max(allowed, (relative / size) ** (1.0 / (k - 1)))
                width = min(width, allowed)
    move = 0.0
    for k in range(order, 0, -1):
        move = (move + series[_S, k]) * width
    return s + move, width


@kernel(_nrt=False, error_model="numpy")
def solve_flow(loss, p0, y, X, U, V, r, eta, h, rtol, atol, max_steps, solver, series):
    """Logistic or squared update: ``ds/dτ = l'(p(s), y)`` on ``τ ∈ [0, ηh]`` (SPEC §B.6).
    Returns ``(s, capped)``.

    ``solver``: ``TAYLOR`` (default) takes Taylor polynomials of ``s(τ)`` (degree up to 16)
    whose coefficients follow from the sums of exponentials in ``p`` by recurrences; the flow of
    a typical update is one step, of low degree when the update is gentle.  ``RK4`` is SPEC
    §B.6's classical RK4 with step doubling and local extrapolation (about 11 evaluations of
    ``p`` per step).  SPEC §B.6
    admits any solver that passes its checks; both do, and agree (tests).

    Squared loss never passes its equilibrium ``p⁻¹(y)`` (clamp) and jumps onto it once the
    remaining decay is below e^-40 (stiff shortcut), so ``ηh = 5000`` lands on the label.
    """
    total = eta * h
    if total <= 0.0:
        return 0.0, False
    squared = loss == SQUARED
    target = 0.0
    known = False  # p⁻¹(y) is only solved for when the flow gets stiff or crosses the label
    reachable = False
    rates = _distinct_rates(U, V, r, series) if solver == TAYLOR else 0
    step = 0.0
    if solver == RK4:
        curvature = 2.0 if squared else 0.25
        step = min(total, 0.5 / (curvature * abs(dp_ds(0.0, X, U, V, r)) + 1e-300))
        step = max(step, total * 1e-12)
    tau = 0.0
    s = 0.0
    p = p0  # the prediction at s
    accepted = 0
    while tau < total:
        if accepted >= max_steps:
            return s, True
        if squared and (total - tau) * 2.0 * abs(dp_ds(s, X, U, V, r)) > 40.0:
            if not known:
                target, status = p_inverse(p0, y, X, U, V, r)
                known = True
                reachable = status == 0
            if reachable and abs(s - target) <= 1e-2 * max(1.0, abs(target)):
                return target, False  # the remaining decay is below e^-40
        if solver == TAYLOR:
            s_new, width = _taylor_advance(loss, s, p, total - tau, y, X, rtol, atol, series,
                                           rates)
        else:
            width = min(step, total - tau)
            s_new, done, step = _rk4_attempt(loss, s, width, p0, y, X, U, V, r, rtol, atol,
                                             total)
            if not done:
                continue
        tau += width
        s = s_new
        accepted += 1
        if tau >= total and not squared:
            break
        p = p_of_s(p0, s, X, U, V, r)
        if squared and (p - y) * (p0 - y) < 0.0:
            if not known:  # never cross the label: clamp onto it
                target, status = p_inverse(p0, y, X, U, V, r)
                known = True
                reachable = status == 0
            if reachable:
                s = target
                p = p_of_s(p0, s, X, U, V, r)
    return s, False


@kernel
def ode_step(loss, p0, y, X, U, V, r, eta, h, rtol, atol, max_steps):
    """:func:`solve_flow` with the default (Taylor) solver and its own scratch."""
    return solve_flow(loss, p0, y, X, U, V, r, eta, h, rtol, atol, max_steps, TAYLOR,
                      series_scratch(U.shape[0]))


@kernel(inline="always")
def dyad_increments(a0, b0, row, ca, cb, s, out_a, out_b):
    """``ã(s) − ã0`` and ``b̃(s) − b̃0`` of the dyad in row ``row`` of ``a0``, ``b0``, without
    cancellation (SPEC §B.2)."""
    down, up = expm1_pair(math.sqrt(ca * cb) * s)
    increments(a0, b0, row, ca, cb, down, up, out_a, out_b)


@kernel(inline="always")
def increments(a0, b0, row, ca, cb, down, up, out_a, out_b):
    """:func:`dyad_increments` given ``expm1(∓r s)`` (a scoring-filter-tree match moves its two
    competitors at ``±s``: one pair of exponentials serves both)."""
    root_a = math.sqrt(ca)
    root_b = math.sqrt(cb)
    for i in range(a0.shape[1]):
        u = a0[row, i] / root_a + b0[row, i] / root_b
        v = a0[row, i] / root_a - b0[row, i] / root_b
        du = u * down if u != 0.0 else 0.0
        dv = v * up if v != 0.0 else 0.0
        out_a[i] = 0.5 * root_a * (du + dv)
        out_b[i] = 0.5 * root_b * (du - dv)


# ---------------------------------------------------------------------------- h_min (SPEC §C)

@kernel
def hmin_linear(loss, p0, y, X, eta, x):
    """Smallest importance weight moving a linear model's prediction from ``p0`` to ``x``."""
    if x == p0:
        return 0.0
    rate = eta * X
    if rate <= 0.0:
        return math.inf
    if loss == HINGE:
        if y * (x - p0) > 0.0 and y * x <= 1.0:
            return y * (x - p0) / rate
        return math.inf
    if loss == SQUARED:
        if (p0 - y) * (x - y) > 0.0 and abs(x - y) < abs(p0 - y):
            return math.log((p0 - y) / (x - y)) / (2.0 * rate)
        return math.inf
    if y * x > y * p0:
        return (y * x - y * p0 + math.exp(y * x) - math.exp(y * p0)) / rate
    return math.inf


_GAUSS_NODES, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(8)


@kernel
def hmin_dyadic(loss, p0, y, X, U, V, r, eta, x):
    """``h_min`` of a dyadic example (SPEC §C.2): ``-y·p⁻¹(x)/η`` for hinge, Gauss–Legendre
    quadrature of ``1/(η l'(p(s), y))`` over ``[0, p⁻¹(x)]`` (⌈2r|σ|⌉ panels of 8 points, at least 2;
    SPEC erratum 10) for logistic and squared.  ``inf`` when ``x`` cannot be reached."""
    if x == p0:
        return 0.0
    target, status = p_inverse(p0, x, X, U, V, r)
    if status == UNREACHABLE or eta <= 0.0:
        return math.inf
    if loss == HINGE:
        if y * x > 1.0 or y * (x - p0) <= 0.0:  # SPEC erratum 9
            return math.inf
        return -y * target / eta
    if loss == SQUARED:
        if (p0 - y) * (x - y) <= 0.0 or abs(x - y) < 1e-3 * abs(p0 - y):
            return math.inf  # at or past the label, or in the log singularity
    elif y * x <= y * p0:
        return math.inf
    top = 0.0
    for m in range(r.shape[0]):
        top = max(top, r[m])
    # SPEC erratum 10 asks for ceil(2r|σ|) panels; at least two keep the rule below 1e-12
    panels = max(2, int(math.ceil(2.0 * top * abs(target))))
    width = target / panels
    total = 0.0
    for k in range(panels):
        centre = (k + 0.5) * width
        for q in range(8):
            s = centre + 0.5 * width * _GAUSS_NODES[q]
            slope = _slope(loss, p_of_s(p0, s, X, U, V, r), y)
            if slope == 0.0:
                return math.inf
            total += 0.5 * width * _GAUSS_WEIGHTS[q] / slope
    return total / eta


@kernel
def query_probability(G, k, average_error, queried, mellowness):
    """The disagreement-based query probability of SPEC §C.4 (the published rule, erratum 5).

    ``G = H/k`` is the gap estimate, ``k`` the weight seen so far, ``average_error = E/k``,
    ``queried`` the weight of queried examples, ``mellowness`` c0.
    """
    if k <= 1.0:
        return 1.0
    if math.isinf(G):
        return 0.0
    b = mellowness * math.log(k + 1.0) / k
    loss_bound = min(max(average_error + math.sqrt((1.0 + 0.5 * math.log(k))
                                                   / (queried + 1e-4)), 0.0), 1.0)
    S = math.sqrt(loss_bound) + math.sqrt(loss_bound + G)
    if G <= math.sqrt(b) * S + b:
        return 1.0
    R = (S + math.sqrt(S * S + 4.0 * G)) / (2.0 * G)
    return b * R * R


SIMULATION, REQUEST = 1, 2  # active modes: labels known, or labels to be requested
# --simulation marks a labelled example the sampler passed over in the kernels' ``requests``
# (a queried one gets the importance it was learned with); the run counts neither its weight
# nor its label, as VW counts only the queried examples
NOT_QUERIED = -1.0


@kernel
def request(H, importance, sampler, mellowness, u):
    """Label-request mode: for an unlabelled example, the importance to learn it with once its
    label comes back (``h/P``), or 0 when its label is not worth requesting."""
    k = sampler[SAMPLER_SEEN]
    if k <= 1.0 or math.isinf(H):
        probability = 1.0
    else:
        probability = query_probability(H / k, k, sampler[SAMPLER_ERRORS] / k,
                                        sampler[SAMPLER_QUERIED], mellowness)
    sampler[SAMPLER_SEEN] = k + importance
    if u >= probability:
        return 0.0
    sampler[SAMPLER_QUERIES] += 1.0
    return importance / probability


@kernel
def returned_label(importance, label, pred, sampler, loss):
    """A requested label came back (learned with its importance): the sampler's sums."""
    sampler[SAMPLER_QUERIED] += importance
    _count_error(importance, label, pred, sampler, loss)


@kernel
def _count_error(weight, label, pred, sampler, loss):
    """Add a learned label's error to the sampler's sum: squared loss counts the error relative
    to the label range seen before it (SPEC erratum 4) and widens the range, which also places
    the decision threshold ``h_min`` aims at; the classification losses count a wrong sign."""
    if loss == SQUARED:
        low, high = sampler[SAMPLER_LOW], sampler[SAMPLER_HIGH]
        if high > low:
            sampler[SAMPLER_ERRORS] += weight * min(1.0, (pred - label) ** 2 / (high - low) ** 2)
        sampler[SAMPLER_LOW] = min(low, label)
        sampler[SAMPLER_HIGH] = max(high, label)
    elif (pred >= 0.0) != (label > 0.0):
        sampler[SAMPLER_ERRORS] += weight


@kernel
def query(H, importance, label, pred, sampler, mellowness, u, loss):
    """The sampler's decision for one labelled example; returns the probability ``P`` used
    (0 when not queried) and updates the running state."""
    k = sampler[SAMPLER_SEEN]
    if k <= 1.0 or math.isinf(H):
        probability = 1.0  # SPEC erratum 3: an unreachable flip is a query
    else:
        probability = query_probability(H / k, k, sampler[SAMPLER_ERRORS] / k, sampler[SAMPLER_QUERIED],
                                        mellowness)
    sampler[SAMPLER_SEEN] = k + importance
    if u >= probability:
        return 0.0
    sampler[SAMPLER_QUERIED] += importance
    sampler[SAMPLER_QUERIES] += 1.0
    _count_error(importance / probability, label, pred, sampler, loss)
    return probability
