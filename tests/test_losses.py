"""SPEC §A: exact importance-aware updates (golden values, small-step limit, invariance, safety,
first-order limit) and the overflow-free logistic solve."""
import math

import numpy as np
import pytest

from pyvw_lite.learners.losses import (HINGE, LOGISTIC, QUANTILE, SQUARED,
                                       importance_aware_update, logistic_delta, loss_slope,
                                       loss_terms, plain_update)


def step(loss, p0, y, eta, h, X):
    """SPEC's flow coordinate s (= -u) for flow time eta*h along a vector of norm² X."""
    aux = math.exp(-abs(y * p0)) if loss == LOGISTIC else 0.0
    return -importance_aware_update(loss, p0, y, eta * h, X, aux, 0.5)


def derivative(loss, p, y):
    if loss == SQUARED:
        return 2.0 * (p - y)
    if loss == HINGE:
        return -y if y * p < 1.0 else 0.0
    return -y / (1.0 + math.exp(y * p))


# SPEC §A.2 golden values (X=3, eta=0.2, h=2 unless stated)
@pytest.mark.parametrize("loss,p0,y,eta,h,X,expected", [
    (SQUARED, 0.3, 1.7, 0.2, 2.0, 3.0, -0.42433162179827416),
    (LOGISTIC, 0.3, 1.0, 0.2, 2.0, 3.0, -0.1481634818751508),
    (HINGE, -0.3, 1.0, 0.2, 50.0, 3.0, -0.43333333333333335),
    (LOGISTIC, 4.0, -1.0, 0.5, 20.0, 5.0, 1.5488351107205716),
])
def test_golden_values(loss, p0, y, eta, h, X, expected):
    assert step(loss, p0, y, eta, h, X) == pytest.approx(expected, rel=1e-14)


def test_logistic_delta_golden_and_extremes():
    assert logistic_delta(-800.0, 1e6) == pytest.approx(813.8146964119409, rel=1e-14)
    assert logistic_delta(700.0, 1.0) == pytest.approx(9.85967654375977e-305, rel=1e-13)


def test_logistic_delta_solves_its_equation_to_machine_precision():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    rng = np.random.default_rng(3)
    for _ in range(600):
        m0 = rng.uniform(-800, 700)
        c = 10.0 ** rng.uniform(-300, 100)
        estimate = c / (1 + math.exp(min(m0, 700))) if m0 <= 0 else c * math.exp(-m0)
        if estimate < 1e-290:
            continue  # the true gain underflows
        delta = logistic_delta(m0, c)
        M0, C, D = mpmath.mpf(m0), mpmath.mpf(c), mpmath.mpf(delta)
        f = (lambda d: d + mpmath.exp(M0) * mpmath.expm1(d) - C) if m0 <= 0 else \
            (lambda d: mpmath.exp(-M0) * (d - C) + mpmath.expm1(d))
        fp = (lambda d: 1 + mpmath.exp(M0 + d)) if m0 <= 0 else \
            (lambda d: mpmath.exp(-M0) + mpmath.exp(d))
        root = D
        for _ in range(8):
            root -= f(root) / fp(root)
        assert abs(D - root) <= 4e-16 * root


@pytest.mark.parametrize("loss,p0,y", [(SQUARED, 0.3, 1.7), (LOGISTIC, 0.4, -1.0),
                                       (HINGE, -0.2, 1.0)])
def test_small_step_limit(loss, p0, y):
    """[A1] n plain gradient steps of weight h/n converge to the closed form at rate O(1/n)."""
    eta, h, X = 0.3, 2.0, 1.5
    exact = step(loss, p0, y, eta, h, X)
    gaps = []
    for n in (1000, 10000):
        s = 0.0
        for _ in range(n):
            s += eta * (h / n) * derivative(loss, p0 - s * X, y)
        gaps.append(abs(s - exact))
    assert gaps[1] < gaps[0] / 5 or gaps[1] < 1e-12
    assert gaps[1] < 1e-3


def test_invariance_and_safety_over_random_cases():
    """[A3] s(h1) then s(h2) equals s(h1 + h2); [A4] squared never crosses the label, hinge stops
    at the margin, the logistic margin only grows."""
    rng = np.random.default_rng(11)
    for _ in range(2000):
        loss = int(rng.integers(3))
        y = float(rng.choice([-1.0, 1.0])) if loss != SQUARED else float(rng.normal())
        p0 = float(rng.normal(scale=3.0))
        eta = 10.0 ** rng.uniform(-3, 3)
        X = float(rng.uniform(0.1, 5.0))
        h1, h2 = 10.0 ** rng.uniform(-3, 4), 10.0 ** rng.uniform(-3, 4)
        s1 = step(loss, p0, y, eta, h1, X)
        s2 = step(loss, p0 - s1 * X, y, eta, h2, X)
        s12 = step(loss, p0, y, eta, h1 + h2, X)
        assert math.isfinite(s12)
        assert s1 + s2 == pytest.approx(s12, rel=1e-9, abs=1e-12)
        p = p0 - s12 * X
        if loss == SQUARED:
            assert (p - y) * (p0 - y) >= -1e-12 and abs(p - y) <= abs(p0 - y) + 1e-12
        elif loss == HINGE:
            assert y * p <= max(1.0, y * p0) + 1e-9
        else:
            assert y * p >= y * p0 - 1e-12


@pytest.mark.parametrize("loss,p0,y", [(SQUARED, 0.3, 1.7), (LOGISTIC, 0.4, -1.0),
                                       (HINGE, -0.2, 1.0)])
def test_first_order_limit(loss, p0, y):
    """[A5] as h -> 0 the update is the plain gradient step."""
    eta, h, X = 0.5, 1e-9, 2.0
    assert step(loss, p0, y, eta, h, X) == pytest.approx(eta * h * derivative(loss, p0, y),
                                                          rel=1e-8)


def test_huge_weights_saturate():
    assert 0.3 - step(SQUARED, 0.3, 1.7, 1.0, 1e12, 2.0) * 2.0 == pytest.approx(1.7)
    assert -0.3 - step(HINGE, -0.3, 1.0, 1.0, 1e12, 2.0) * 2.0 == pytest.approx(1.0)
    assert math.isfinite(step(LOGISTIC, 0.3, 1.0, 1.0, 1e300, 2.0))


def test_loss_terms_share_one_exponential():
    value, gradient2, aux = loss_terms(LOGISTIC, 0.7, -1.0, 0.5)
    assert value == pytest.approx(math.log1p(math.exp(0.7)))
    assert gradient2 == pytest.approx(derivative(LOGISTIC, 0.7, -1.0) ** 2)
    assert aux == pytest.approx(math.exp(-0.7))


def _rk4_flow(p0, q, c, n=4000):
    """``dp/dτ = -(σ(p) - q)`` integrated over ``[0, c]`` by classical RK4."""
    def f(p):
        return -(1.0 / (1.0 + math.exp(-p)) - q)
    p, dt = p0, c / n
    for _ in range(n):
        k1 = f(p)
        k2 = f(p + 0.5 * dt * k1)
        k3 = f(p + 0.5 * dt * k2)
        k4 = f(p + dt * k3)
        p += dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6.0
    return p


def test_soft_logistic_label_step_is_the_exact_flow():
    """A soft label y in (-1, 1) (VW's logistic labels between --logistic_min and _max: the
    class-1 probability q = (y+1)/2) moves the prediction along the exact gradient flow of
    q·l(p, 1) + (1-q)·l(p, -1), toward logit(q) and never past it."""
    from pyvw_lite.learners.losses import soft_logistic_flow
    rng = np.random.default_rng(11)
    for _ in range(40):
        p0, q, c = rng.normal() * 6.0, rng.uniform(0.02, 0.98), 10.0 ** rng.uniform(-4, 1.5)
        moved = soft_logistic_flow(p0, q, c)
        assert abs(moved - _rk4_flow(p0, q, c)) < 1e-9
        star = math.log(q / (1.0 - q))
        assert (moved - star) * (p0 - star) >= 0.0 and abs(moved - star) <= abs(p0 - star)
        assert abs(soft_logistic_flow(p0, q, 1e12) - star) < 1e-9  # a huge weight: logit(q)
    # through importance_aware_update, in VW's update number (p_new = p + X·u)
    u = importance_aware_update(LOGISTIC, 1.5, 0.2, 0.3, 2.0, 0.0, 0.5)
    assert abs(1.5 + 2.0 * u - _rk4_flow(1.5, 0.6, 0.6)) < 1e-9
    # near a hard label the soft flow follows the hard one while far from logit(q)
    hard = 0.4 - step(LOGISTIC, 0.4, 1.0, 0.5, 2.0, 3.0) * 3.0
    assert abs(soft_logistic_flow(0.4, 1.0 - 1e-12, 3.0) - hard) < 1e-9


def test_soft_logistic_label_loss_and_gradient():
    value, gradient2, _ = loss_terms(LOGISTIC, 0.3, 0.0, 0.5)  # q = 1/2
    assert math.isclose(value, 0.5 * math.log1p(math.exp(-0.3)) + 0.5 * math.log1p(math.exp(0.3)))
    assert math.isclose(gradient2, (1.0 / (1.0 + math.exp(-0.3)) - 0.5) ** 2)


def test_quantile_exact_step_is_the_limit_of_tiny_steps():
    """The quantile loss's exact update (VW's closed form) against 20,000 plain steps of the same
    total weight, over random τ, labels, predictions, rates and weights: equal to the fine-step
    error (one tiny step), never past the label, and additive in the weight."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        tau = float(rng.uniform(0.05, 0.95))
        p0, y = (float(v) for v in rng.normal(scale=2.0, size=2))
        X = float(rng.uniform(0.1, 4.0))
        scale = float(10.0 ** rng.uniform(-2, 1))
        u = importance_aware_update(QUANTILE, p0, y, scale, X, 0.0, tau)
        n = 20000
        p = p0
        for _ in range(n):
            p += X * plain_update(QUANTILE, p, y, scale / n, 0.0, tau)
        assert abs(p0 + X * u - p) <= X * max(tau, 1 - tau) * scale / n + 1e-12
        assert (p0 + X * u - y) * (p0 - y) >= -1e-15  # never crosses the label
        half = importance_aware_update(QUANTILE, p0, y, 0.5 * scale, X, 0.0, tau)
        rest = importance_aware_update(QUANTILE, p0 + X * half, y, 0.5 * scale, X, 0.0, tau)
        assert half + rest == pytest.approx(u, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.8])
def test_quantile_loss_and_slope(tau):
    """τ·(y−p) above the prediction, (1−τ)·(p−y) below; the slope and l'² agree with it."""
    for p, y in [(0.2, 1.2), (1.5, -0.5), (0.7, 0.7)]:
        value, gradient2, _ = loss_terms(QUANTILE, p, y, tau)
        expected = tau * (y - p) if y > p else (1 - tau) * (p - y)
        assert value == pytest.approx(expected)
        slope = loss_slope(QUANTILE, p, y, tau)
        assert gradient2 == pytest.approx(slope * slope)
        h = 1e-7
        if p != y:
            numeric = (loss_terms(QUANTILE, p + h, y, tau)[0]
                       - loss_terms(QUANTILE, p - h, y, tau)[0]) / (2 * h)
            assert slope == pytest.approx(numeric, rel=1e-6)


def test_loss_slope_is_the_derivative_of_every_loss():
    rng = np.random.default_rng(9)
    for loss in (SQUARED, LOGISTIC, HINGE, QUANTILE):
        for _ in range(50):
            p = float(rng.normal(scale=2.0))
            y = float(rng.choice([-1.0, 1.0])) if loss in (LOGISTIC, HINGE) \
                else float(rng.normal())
            if loss == HINGE and abs(1 - y * p) < 1e-3:
                continue
            h = 1e-6
            numeric = (loss_terms(loss, p + h, y, 0.3)[0] - loss_terms(loss, p - h, y, 0.3)[0]) \
                / (2 * h)
            assert loss_slope(loss, p, y, 0.3) == pytest.approx(numeric, rel=1e-5, abs=1e-7)
