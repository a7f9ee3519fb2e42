"""Loss functions and their exact importance-aware steps (SPEC §0.3, §A.2).

Every update here is the closed-form solution of the gradient flow of the prediction,
``dp/dτ = -X·l'(p, y)`` over flow time ``τ = η·h`` (SPEC §0.2), never "gradient × weight".
Functions return VW's update number ``u`` (``p_new = p + X·u``); SPEC's flow coordinate is
``s = -u``.
"""
from __future__ import annotations

import math

from ..jit import kernel

SQUARED, LOGISTIC, HINGE, QUANTILE = 0, 1, 2, 3
LOSS_CODES = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE, "quantile": QUANTILE}
LOSS_NAMES = {code: name for name, code in LOSS_CODES.items()}

LOGISTIC_ZERO_MARGIN = 24.0 * math.log(2.0)  # e^{-m} <= 2^-24: 1 + e^{-m} == 1 in float32


@kernel
def softplus(z):
    """``log(1 + e^z)`` without overflow or cancellation."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@kernel
def loss_value(loss, p, y, tau):
    """``l(p, y)`` of SPEC §0.3 (squared has no ½, as in VW); see :func:`loss_terms`."""
    return loss_terms(loss, p, y, tau)[0]


@kernel(inline="always")
def loss_terms(loss, p, y, tau):
    """Everything an update needs from one loss evaluation at ``p``: ``(l, l'^2, aux)``.

    ``aux`` is ``e^{-|yp|}`` for logistic (shared by the loss, its gradient and the exact
    update, so one ``exp`` serves all three) and 0 otherwise.  ``tau`` is the quantile loss's
    ``--quantile_tau`` (VW: ``τ·(y−p)`` above the prediction, ``(1−τ)·(p−y)`` below; the
    other losses ignore it).
    """
    if loss == QUANTILE:
        e = y - p
        if e > 0.0:
            return tau * e, tau * tau, 0.0
        return (tau - 1.0) * e, ((1.0 - tau) * (1.0 - tau) if e < 0.0 else 0.0), 0.0
    if loss == SQUARED:
        return (p - y) * (p - y), 4.0 * (p - y) * (p - y), 0.0
    if loss == LOGISTIC:
        if y != 1.0 and y != -1.0:  # a soft label q = (y+1)/2: l = q·l(p,1) + (1−q)·l(p,−1)
            q = 0.5 * (y + 1.0)
            g = sigmoid(p) - q
            return q * softplus(-p) + (1.0 - q) * softplus(p), g * g, 0.0
        m = y * p
        e = math.exp(-abs(m))
        q = e / (1.0 + e) if m > 0.0 else 1.0 / (1.0 + e)  # |l'| = 1/(1 + e^m)
        return max(-m, 0.0) + math.log1p(e), q * q, e
    margin = 1.0 - y * p
    return (margin if margin > 0.0 else 0.0), (y * y if margin > 0.0 else 0.0), 0.0


@kernel(inline="always")
def loss_slope(loss, p, y, tau):
    """``l'(p, y)``, the signed derivative in the prediction (VW's ``first_derivative``)."""
    if loss == SQUARED:
        return 2.0 * (p - y)
    if loss == QUANTILE:
        return -tau if y > p else (1.0 - tau if y < p else 0.0)
    if loss == LOGISTIC:
        if y != 1.0 and y != -1.0:
            return sigmoid(p) - 0.5 * (y + 1.0)
        m = y * p
        return -y / (1.0 + math.exp(m)) if m <= 0.0 else -y * math.exp(-m) / (1.0 + math.exp(-m))
    return -y if y * p < 1.0 else 0.0


@kernel(inline="always")
def loss_is_positive(loss, p, y, value):
    """VW skips an update when the loss *in float32* is 0; logistic stops near ``yp = 16.6``."""
    if loss == LOGISTIC:
        return y * p < LOGISTIC_ZERO_MARGIN or (y != 1.0 and y != -1.0)
    return value > 0.0


@kernel
def logistic_delta(m0, c):
    """See :func:`logistic_delta_core`; computes ``e^{-|m0|}`` itself."""
    return logistic_delta_core(m0, c, math.exp(-abs(m0)))


@kernel(inline="always")
def logistic_delta_core(m0, c, e):
    """Margin gain ``δ ≥ 0`` solving ``m + e^m = m0 + e^{m0} + c`` with ``m = m0 + δ`` (SPEC §A.2.3).

    Written as ``δ + e^{m0}·expm1(δ) = c`` (``m0 ≤ 0``) or ``e^{-m0}(δ − c) + expm1(δ) = 0``
    (``m0 > 0``) so no exponential overflows and nothing cancels.  Both are convex and increasing;
    Halley's method from the second-order series ``cq − ½c²e^{m0}q³`` (``q = 1/(1+e^{m0})``),
    capped by SPEC's upper bounds, converges in two or three steps of one ``expm1`` each.
    """
    if c <= 0.0:
        return 0.0
    em = e  # e^{m0} when m0 <= 0, e^{-m0} when m0 > 0: never above 1
    q = 1.0 / (1.0 + em) if m0 <= 0.0 else em / (1.0 + em)
    bound = c * q  # the flow never moves faster than its starting speed
    if bound > 1.0:  # SPEC's second bound; erratum 7 keeps it finite for large m0
        bound = min(bound, softplus(math.log(c) - m0) if m0 <= 0.0 else math.log1p(c * em))
    delta = bound * (1.0 - 0.5 * bound * (1.0 - q))
    if not (0.0 < delta < bound):
        delta = bound
    for _ in range(50):
        growth = math.expm1(delta)
        if m0 <= 0.0:
            # e^{m0}·e^δ, taken directly when e^{m0} underflows or e^δ overflows (no inf·0)
            lifted = em * (growth + 1.0) if em > 1e-300 and delta < 700.0 \
                else math.exp(m0 + delta)
            f = delta + (em * growth if delta <= 0.5 else lifted - em) - c
            f1 = 1.0 + lifted
            f2 = lifted
        else:
            f = em * (delta - c) + growth
            f1 = em + growth + 1.0
            f2 = growth + 1.0
        newton = f / f1
        step = newton / (1.0 - 0.5 * newton * f2 / f1)  # Halley, in a form that cannot overflow
        delta -= step
        if delta < 0.0:
            delta = 0.0
        # Halley: the next error is below 0.42*|step|^3 (|f2|, |f3| <= f1 for both forms)
        if 0.42 * step * step * abs(step) <= 1e-16 * delta or delta == 0.0:
            break
    return delta


@kernel(inline="always")
def importance_aware_update(loss, p, y, scale, x2, aux, tau):
    """Exact update ``u`` (``aux`` from :func:`loss_terms`) after flow time ``scale = η·h``
    along a feature vector of norm² ``x2``.

    squared: ``(y−p)(1−e^{−2·scale·x2})/x2`` (never crosses the label);
    hinge: ``y·min(scale, (1−yp)/x2)`` (stops at the margin);
    quantile: ``τ·scale`` up or ``(1−τ)·scale`` down at constant speed, stopping at the label
    (``(y−p)/x2``), VW's closed form;
    logistic: the Lambert-W solution, as ``y·δ/x2`` with ``δ`` from :func:`logistic_delta`.
    """
    if x2 <= 0.0 or scale <= 0.0:
        return 0.0
    if loss == SQUARED:
        return (y - p) * -math.expm1(-2.0 * scale * x2) / x2
    if loss == HINGE:
        if y * p >= 1.0:
            return 0.0
        reach = (1.0 - y * p) / x2
        return y * (scale if scale < reach else reach)
    if loss == QUANTILE:
        reach = (y - p) / x2
        if reach > 0.0:
            return min(tau * scale, reach)
        return max(-(1.0 - tau) * scale, reach)
    if y != 1.0 and y != -1.0:
        return (soft_logistic_flow(p, 0.5 * (y + 1.0), scale * x2) - p) / x2
    return y * logistic_delta_core(y * p, scale * x2, aux) / x2


@kernel
def sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@kernel
def _log_one_minus_exp(a):
    """``log(1 − e^{−a})`` for ``a > 0``, accurate at both ends."""
    return math.log(-math.expm1(-a)) if a < 0.6931471805599453 else math.log1p(-math.exp(-a))


@kernel
def soft_logistic_flow(p0, q, c):
    """The prediction after flow time ``c`` (``η·h·X``) of ``dp/dτ = −(σ(p) − q)``, the exact
    importance-aware step of the logistic loss with a soft label ``q ∈ (0, 1)``.

    With ``p* = logit(q)`` and ``v = p − p*`` the flow separates:
    ``(q + 1/(e^v − 1)) dv = −q(1−q) dτ``, so ``K(a) = r·a + log(1 − e^{−a})`` of ``a = |v|``
    (``r = q`` above ``p*``, ``1 − q`` below) falls by exactly ``q(1−q)·c``.  ``K`` increases and
    is concave in ``a``, so Newton's method from below the root climbs to it monotonically; a
    bracket keeps every step inside ``(0, a0]``.  The flow never crosses ``p*``.
    """
    if c <= 0.0:
        return p0
    star = math.log(q) - math.log1p(-q)
    a0 = abs(p0 - star)
    if a0 == 0.0:
        return p0
    r = q if p0 > star else 1.0 - q
    drop = q * (1.0 - q) * c
    goal = r * a0 + _log_one_minus_exp(a0) - drop
    if goal < -700.0:
        return star  # |p − p*| = e^{goal}: below any double's resolution of p*
    lo, hi = 0.0, a0
    # from below: the tangent of a concave function lies above it, so a Newton step from a
    # point left of the root stays left of it; start at a point with K(a) <= goal
    a = math.exp(goal) if goal < 0.0 else a0 - drop / (r + 1.0 / math.expm1(a0))
    if not (0.0 < a < a0):
        a = 0.5 * a0
    for _ in range(100):
        k = r * a + _log_one_minus_exp(a) - goal
        if k > 0.0:
            hi = a
        else:
            lo = a
        slope = r + 1.0 / math.expm1(a)
        step = k / slope
        nxt = a - step
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        if abs(nxt - a) <= 1e-15 * a or hi - lo <= 1e-15 * hi:
            a = nxt
            break
        a = nxt
    return star + a if p0 > star else star - a


@kernel(inline="always")
def plain_update(loss, p, y, scale, aux, tau):
    """The non-invariant step ``−scale·l'(p, y)`` (VW without ``--invariant``)."""
    if loss == SQUARED:
        return 2.0 * (y - p) * scale
    if loss == QUANTILE:
        return tau * scale if y > p else (-(1.0 - tau) * scale if y < p else 0.0)
    if loss == HINGE:
        return y * scale if y * p < 1.0 else 0.0
    if y != 1.0 and y != -1.0:
        return scale * (0.5 * (y + 1.0) - sigmoid(p))
    return y * scale * (aux / (1.0 + aux) if y * p > 0.0 else 1.0 / (1.0 + aux))
