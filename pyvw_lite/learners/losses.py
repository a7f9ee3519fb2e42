"""Loss functions and their exact importance-aware steps (SPEC §0.3, §A.2).

Every update here is the closed-form solution of the gradient flow of the prediction,
``dp/dτ = -X·l'(p, y)`` over flow time ``τ = η·h`` (SPEC §0.2), never "gradient × weight".
Functions return VW's update number ``u`` (``p_new = p + X·u``); SPEC's flow coordinate is
``s = -u``.
"""
from __future__ import annotations

import math

from ..jit import kernel

SQUARED, LOGISTIC, HINGE = 0, 1, 2
LOSS_CODES = {"squared": SQUARED, "logistic": LOGISTIC, "hinge": HINGE}
LOSS_NAMES = {code: name for name, code in LOSS_CODES.items()}

FLOAT32_EPS_HALF = 2.0 ** -24  # 1 + x == 1 in float32 when x <= 2^-24


@kernel
def softplus(z):
    """``log(1 + e^z)`` without overflow or cancellation."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@kernel
def loss_value(loss, p, y):
    """``l(p, y)`` of SPEC §0.3 (squared has no ½, as in VW)."""
    if loss == SQUARED:
        return (p - y) * (p - y)
    if loss == LOGISTIC:
        return softplus(-y * p)
    margin = 1.0 - y * p
    return margin if margin > 0.0 else 0.0


@kernel
def loss_is_positive(loss, p, y):
    """VW skips an update when the loss *in float32* is 0; logistic stops near ``yp ≈ 16.6``."""
    if loss == LOGISTIC:
        return math.exp(-y * p) > FLOAT32_EPS_HALF
    return loss_value(loss, p, y) > 0.0


@kernel
def squared_gradient(loss, p, y):
    """``l'(p, y)²``: the adaptive (AdaGrad) accumulator's increment per unit weight."""
    if loss == SQUARED:
        return 4.0 * (p - y) * (p - y)
    if loss == LOGISTIC:
        d = 1.0 / (1.0 + math.exp(min(y * p, 700.0)))
        return d * d
    return y * y if y * p < 1.0 else 0.0


@kernel
def logistic_delta(m0, c):
    """Margin gain ``δ ≥ 0`` solving ``m + e^m = m0 + e^{m0} + c`` with ``m = m0 + δ`` (SPEC §A.2.3).

    Newton from an upper bound decreases monotonically to the root; the two branches keep every
    exponential finite for ``|m0|`` up to the float range.
    """
    if c <= 0.0:
        return 0.0
    if m0 <= 0.0:
        bound1 = c / (1.0 + math.exp(m0))
        bound2 = softplus(math.log(c) - m0)
    else:
        em = math.exp(-m0)
        bound1 = c * em / (1.0 + em)  # SPEC erratum 7: no overflow for large m0
        bound2 = math.log1p(c * em)
    delta = min(bound1, bound2)
    for _ in range(100):
        if m0 <= 0.0:
            e = math.exp(m0 + delta)
            f = delta + e * (-math.expm1(-delta)) - c
            fprime = 1.0 + e
        else:
            em = math.exp(-m0)
            f = em * (delta - c) + math.expm1(delta)
            fprime = em + math.exp(delta)
        step = f / fprime
        delta -= step
        if delta < 0.0:
            delta = 0.0
        if abs(step) <= 1e-15 * delta:
            break
    return delta


@kernel
def importance_aware_update(loss, p, y, scale, x2):
    """Exact update ``u`` after flow time ``scale = η·h`` along a feature vector of norm² ``x2``.

    squared: ``(y−p)(1−e^{−2·scale·x2})/x2`` (never crosses the label);
    hinge: ``y·min(scale, (1−yp)/x2)`` (stops at the margin);
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
    return y * logistic_delta(y * p, scale * x2) / x2


@kernel
def plain_update(loss, p, y, scale):
    """The non-invariant step ``−scale·l'(p, y)`` (VW without ``--invariant``)."""
    if loss == SQUARED:
        return 2.0 * (y - p) * scale
    if loss == HINGE:
        return y * scale if y * p < 1.0 else 0.0
    return y * scale / (1.0 + math.exp(min(y * p, 700.0)))
