"""SPEC §B and §C numerics of the dyadic learner: golden values and properties."""
import math

import numpy as np
import pytest

from pyvw_lite.learners.dyadic import (RK4, SERIES_ORDER, TAYLOR, UNREACHABLE, dp_ds,
                                       dyad_increments, dyad_terms, hinge_step, hmin_dyadic,
                                       hmin_linear, ode_step, p_inverse, p_of_s,
                                       quantile_step, query_probability, series_scratch,
                                       solve_flow)
from pyvw_lite.learners.losses import HINGE, LOGISTIC, QUANTILE, SQUARED, loss_slope

# SPEC §B.3 golden example: effective latent vectors, c_a = c_b = 1, x = (1, 2), w0 = (.1, -.2)
A0 = np.array([0.5, -0.25, 1.0])
B0 = np.array([0.75, 0.5, -0.5])
X_LIN = np.array([1.0, 2.0])
W0 = np.array([0.1, -0.2])


def golden_state():
    U, V, r = dyad_terms(np.atleast_2d(A0), np.atleast_2d(B0), 0, 1.0, 1.0)
    p0 = float(A0 @ B0 + W0 @ X_LIN)
    return p0, float(X_LIN @ X_LIN), np.array([U]), np.array([V]), np.array([r])


def test_golden_statistics_and_p_of_s():
    p0, X, U, V, r = golden_state()
    assert (U[0], V[0], X, p0) == pytest.approx((1.875, 2.875, 5.0, -0.55), rel=1e-15)
    assert p_of_s(p0, 0.1, X, U, V, r) == pytest.approx(-1.2941031919223183, rel=1e-14)
    assert p_of_s(p0, -0.5, X, U, V, r) == pytest.approx(3.209781258748203, rel=1e-14)
    assert p_of_s(p0, 2.0, X, U, V, r) == pytest.approx(-49.53383488059332, rel=1e-14)


@pytest.mark.parametrize("y,expected", [(1.0, -0.2111981841643341), (-1.0, 0.060718598267694004),
                                        (0.0, -0.07486679283669381), (5.0, -0.7083141931215738)])
def test_golden_inverse(y, expected):
    p0, X, U, V, r = golden_state()
    s, status = p_inverse(p0, y, X, U, V, r)
    assert status == 0 and s == pytest.approx(expected, rel=1e-11)


def test_inverse_round_trips_and_existence():
    """[B4] random states, including a ≈ b, a ≈ -b and tiny vectors; [B4b] the hyperdiagonal."""
    rng = np.random.default_rng(4)
    for case in range(400):
        a = rng.normal(size=3)
        kind = case % 4
        b = a + 1e-6 * rng.normal(size=3) if kind == 1 else (
            -a + 1e-6 * rng.normal(size=3) if kind == 2 else rng.normal(size=3))
        if kind == 3:
            a, b = a * 1e-4, b * 1e-4
        ca, cb = rng.uniform(0.5, 2.0, size=2)
        U, V, r = (np.array([v]) for v in dyad_terms(np.atleast_2d(a), np.atleast_2d(b), 0, ca, cb))
        X = 0.0 if case % 5 == 0 else float(rng.uniform(0.5, 5.0))
        p0 = float(rng.normal())
        y = float(rng.normal(scale=2.0))
        s, status = p_inverse(p0, y, X, U, V, r)
        if status == 0:
            assert abs(p_of_s(p0, s, X, U, V, r) - y) <= 9e-12 * max(1.0, abs(y))
            assert s == 0.0 or np.sign(s) == np.sign(p0 - y)
        else:
            assert X == 0.0  # with a linear part every target is reachable
    a = np.array([math.sqrt(0.3), 0.0])
    U, V, r = (np.array([v]) for v in dyad_terms(np.atleast_2d(a), np.atleast_2d(a), 0, 1.0, 1.0))
    assert p_inverse(0.3, -0.1, 0.0, U, V, r)[1] == UNREACHABLE
    assert p_inverse(0.3, 0.1, 0.0, U, V, r)[0] == pytest.approx(math.log(3.0) / 2.0, rel=1e-12)


def test_stable_form_beats_the_naive_one_near_the_hyperdiagonal():
    """[B3] with a ≈ b the cosh/sinh form loses every digit; the U/V form keeps them."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    a = np.array([1.0, 2.0, 3.0])
    b = a + 1e-9
    U, V, r = (np.array([v]) for v in dyad_terms(np.atleast_2d(a), np.atleast_2d(b), 0, 1.0, 1.0))
    assert V[0] == pytest.approx(3e-18, rel=1e-6)  # the norm formula would give 0
    ab, n2 = float(a @ b), float(a @ a + b @ b)
    # the reference takes a·b and |a|²+|b|² exactly from the same double vectors
    ab_exact = mpmath.fsum(mpmath.mpf(x) * mpmath.mpf(y) for x, y in zip(a, b))
    n2_exact = mpmath.fsum(mpmath.mpf(x) ** 2 for x in np.concatenate([a, b]))
    for s in (-20.0, -3.0, 0.7, 5.0, 20.0):
        exact = ab_exact * mpmath.cosh(2 * s) - n2_exact * mpmath.cosh(s) * mpmath.sinh(s)
        stable = p_of_s(float(ab_exact), s, 0.0, U, V, r)
        naive = ab * math.cosh(2 * s) - n2 * math.cosh(s) * math.sinh(s)
        scale = abs(float(exact)) + 1.0
        assert abs(stable - float(exact)) <= 1e-12 * scale
        if s >= 20:  # a ≈ b: for s > 0 the cosh/sinh terms cancel, the V term is what is left
            assert abs(naive - float(exact)) > 1e3 * max(abs(stable - float(exact)), 1e-300)


def test_golden_hinge_step_and_parameter_update():
    """[B5] golden: y = +1, η = 0.5; h = 0.2 moves s = -0.1, h = 1 stops at p⁻¹(1)."""
    p0, X, U, V, r = golden_state()
    s = hinge_step(p0, 1.0, X, U, V, r, 0.5, 0.2)
    assert s == pytest.approx(-0.1, rel=1e-15)
    da, db = np.empty(3), np.empty(3)
    dyad_increments(np.atleast_2d(A0), np.atleast_2d(B0), 0, 1.0, 1.0, s, da, db)
    a, b, w = A0 + da, B0 + db, W0 - s * X_LIN
    np.testing.assert_allclose(a, [0.57762715, -0.20116767, 0.95492079], atol=5e-9)
    np.testing.assert_allclose(b, [0.8038365, 0.4774604, -0.40233533], atol=5e-9)
    np.testing.assert_allclose(w, [0.2, 0.0], atol=1e-15)
    assert a @ b + w @ X_LIN == pytest.approx(0.18406981411278, rel=1e-12)
    assert p_of_s(p0, s, X, U, V, r) == pytest.approx(0.18406981411278, rel=1e-12)
    assert hinge_step(p0, 1.0, X, U, V, r, 0.5, 1.0) == pytest.approx(-0.2111981841643341,
                                                                       rel=1e-11)


@pytest.mark.parametrize("tau,y,h", [(0.3, 2.0, 0.4), (0.3, 2.0, 50.0), (0.8, -1.5, 0.3),
                                     (0.8, -1.5, 40.0), (0.5, -0.55, 1.0)])
def test_quantile_step_is_the_limit_of_tiny_steps(tau, y, h):
    """The dyadic quantile step (closed form: constant speed τη or (1−τ)η in s, stopping at
    p⁻¹(y)) against 100,000 Euler steps of ds/dτ = l'(p(s)) (p falls as s grows) along the
    golden state's flow."""
    p0, X, U, V, r = golden_state()
    eta = 0.5
    s = quantile_step(p0, y, tau, X, U, V, r, eta, h)
    n = 100_000
    dt = eta * h / n
    fine = 0.0
    for _ in range(n):
        fine += dt * loss_slope(QUANTILE, p_of_s(p0, fine, X, U, V, r), y, tau)
    assert s == pytest.approx(fine, abs=2 * dt + 1e-12)
    p = p_of_s(p0, s, X, U, V, r)
    assert (p - y) * (p0 - y) >= -1e-12  # never past the label
    if y != p0 and eta * h * max(tau, 1 - tau) > abs(p_inverse(p0, y, X, U, V, r)[0]):
        assert p == pytest.approx(y, abs=1e-10)  # a large weight lands on the label


def test_golden_ode_steps_and_stiff_squared():
    """[B6] golden values at the default tolerance; [B6b] ηh = 5000 lands on the label."""
    p0, X, U, V, r = golden_state()
    s, capped = ode_step(LOGISTIC, p0, -1.0, X, U, V, r, 0.5, 1.0, 1e-7, 1e-10, 100000)
    assert not capped and s == pytest.approx(0.12823750013329, rel=2e-8)
    s, _ = ode_step(SQUARED, p0, 2.0, X, U, V, r, 0.5, 1.0, 1e-7, 1e-10, 100000)
    assert s == pytest.approx(-0.34494417168, rel=2e-8)
    s, _ = ode_step(SQUARED, p0, 2.0, X, U, V, r, 1.0, 5000.0, 1e-7, 1e-10, 100000)
    assert p_of_s(p0, s, X, U, V, r) == pytest.approx(2.0, abs=1e-12)


def test_ode_invariance_and_small_step_limit():
    """[B6] h = 0.4h + 0.6h, and many small explicit steps along the flow."""
    rng = np.random.default_rng(9)
    for loss, y in ((LOGISTIC, 1.0), (SQUARED, 0.7)):
        for _ in range(20):
            a, b = rng.normal(size=2), rng.normal(size=2)
            U, V, r = (np.array([v]) for v in dyad_terms(np.atleast_2d(a), np.atleast_2d(b), 0, 1.0, 1.0))
            p0, X = float(a @ b), 1.0
            whole, _ = ode_step(loss, p0, y, X, U, V, r, 0.5, 1.0, 1e-9, 1e-12, 100000)
            first, _ = ode_step(loss, p0, y, X, U, V, r, 0.5, 0.4, 1e-9, 1e-12, 100000)
            p1 = p_of_s(p0, first, X, U, V, r)
            # the rest starts from the moved state: re-centre the dyad at s = first
            da, db = np.empty(2), np.empty(2)
            dyad_increments(np.atleast_2d(a), np.atleast_2d(b), 0, 1.0, 1.0, first, da, db)
            U2, V2, r2 = (np.array([v]) for v in dyad_terms(np.atleast_2d(a + da), np.atleast_2d(b + db), 0, 1.0, 1.0))
            rest, _ = ode_step(loss, p1, y, X, U2, V2, r2, 0.5, 0.6, 1e-9, 1e-12, 100000)
            assert first + rest == pytest.approx(whole, rel=1e-7, abs=1e-10)
            s, n = 0.0, 20000
            for _ in range(n):
                p = p_of_s(p0, s, X, U, V, r)
                slope = 2 * (p - y) if loss == SQUARED else -y / (1 + math.exp(y * p))
                s += 0.5 * (1.0 / n) * slope
            assert s == pytest.approx(whole, abs=2e-4)


def _random_dyads(rng, count, shared_rate):
    """``count`` dyads as a scoring-filter-tree match builds them (one rate, the second
    competitor's U and V swapped) or with distinct rates."""
    U, V, r = np.empty(count), np.empty(count), np.empty(count)
    ca, cb = rng.uniform(0.5, 2.0, size=2)
    for m in range(count):
        if not shared_rate:
            ca, cb = rng.uniform(0.5, 2.0, size=2)
        a, b = rng.normal(scale=1.2, size=(2, 1, 3))
        U[m], V[m], r[m] = dyad_terms(a, b, 0, ca, cb)
        if shared_rate and m % 2:
            U[m], V[m] = V[m], U[m]
    return U, V, r


@pytest.mark.parametrize("loss", [LOGISTIC, SQUARED])
@pytest.mark.parametrize("shared_rate", [True, False])
def test_taylor_and_rk4_solvers_agree(loss, shared_rate):
    """The default Taylor solver and SPEC §B.6's RK4 give the same flow, from gentle to stiff
    (ηh·|p'| from 1e-3 to 1e3), with one to four dyads."""
    rng = np.random.default_rng(31 + loss + 2 * shared_rate)
    for case in range(60):
        U, V, r = _random_dyads(rng, 1 + case % 4, shared_rate)
        X = float(rng.uniform(0.0, 3.0))
        p0 = float(rng.normal(scale=1.5))
        y = float(rng.choice([-1.0, 1.0])) if loss == LOGISTIC else float(rng.normal())
        h = 10.0 ** rng.uniform(-3, 3) / abs(dp_ds(0.0, X, U, V, r))
        series = series_scratch(U.size)
        taylor, capped = solve_flow(loss, p0, y, X, U, V, r, 1.0, h, 1e-11, 1e-14, 100000,
                                    TAYLOR, series)
        assert not capped
        rk4, _ = solve_flow(loss, p0, y, X, U, V, r, 1.0, h, 1e-11, 1e-14, 100000, RK4,
                            series)
        assert taylor == pytest.approx(rk4, rel=1e-8, abs=1e-12)


def test_taylor_solver_on_a_stiff_logistic_case():
    """[B6c]-style: ηh = 5000 with |a|, |b| ≈ 5.  The Taylor solver agrees with a tight RK4 and
    takes fewer steps than RK4 at the same tolerance (here 3 against 13, and 42 against 59:
    the saturating logistic flow grows like log τ, which bounds every explicit step)."""
    a = np.array([[5.0, -4.5, 3.0]])
    b = np.array([[4.0, 5.0, -3.5]])
    U, V, r = (np.array([v]) for v in dyad_terms(a, b, 0, 1.0, 1.0))
    p0 = float(a[0] @ b[0])
    series = series_scratch(1)

    def steps(solver, y):
        count = 1
        while solve_flow(LOGISTIC, p0, y, 1.0, U, V, r, 1.0, 5000.0, 1e-7, 1e-10, count,
                         solver, series)[1]:
            count += 1
        return count

    for y in (-1.0, 1.0):
        taylor, capped = solve_flow(LOGISTIC, p0, y, 1.0, U, V, r, 1.0, 5000.0, 1e-7, 1e-10,
                                    100000, TAYLOR, series)
        rk4, _ = solve_flow(LOGISTIC, p0, y, 1.0, U, V, r, 1.0, 5000.0, 1e-10, 1e-13, 100000,
                            RK4, series)
        assert not capped and taylor == pytest.approx(rk4, rel=1e-7)
        assert steps(TAYLOR, y) < steps(RK4, y)
    assert SERIES_ORDER == 16


def test_hmin_golden_values():
    """SPEC §C.2 golden values, linear and dyadic."""
    assert hmin_linear(HINGE, 1.3, -1.0, 2.0, 0.5, 0.0) == pytest.approx(1.3, rel=1e-15)
    assert hmin_linear(LOGISTIC, 1.3, -1.0, 2.0, 0.5, 0.0) == pytest.approx(2.0274682069659873,
                                                                            rel=1e-14)
    assert hmin_linear(SQUARED, 0.2, 1.0, 2.0, 0.5, 0.5) == pytest.approx(0.23500181462286782,
                                                                          rel=1e-14)
    p0, X, U, V, r = golden_state()
    assert hmin_dyadic(HINGE, p0, 1.0, X, U, V, r, 0.5, 0.0) == pytest.approx(
        0.14973358567338763, rel=1e-11)
    assert hmin_dyadic(LOGISTIC, p0, 1.0, X, U, V, r, 0.5, 0.0) == pytest.approx(
        0.264940294414591, rel=1e-9)


def test_hmin_lands_on_its_target():
    """[C1b/C2] learning with h_min moves the prediction onto x."""
    p0, X, U, V, r = golden_state()
    h = hmin_dyadic(LOGISTIC, p0, 1.0, X, U, V, r, 0.5, 0.0)
    s, _ = ode_step(LOGISTIC, p0, 1.0, X, U, V, r, 0.5, h, 1e-10, 1e-13, 100000)
    assert p_of_s(p0, s, X, U, V, r) == pytest.approx(0.0, abs=1e-9)
    h = hmin_dyadic(HINGE, p0, 1.0, X, U, V, r, 0.5, 0.0)
    s = hinge_step(p0, 1.0, X, U, V, r, 0.5, h)
    assert p_of_s(p0, s, X, U, V, r) == pytest.approx(0.0, abs=1e-12)


def test_query_probability():
    """[C4] golden value, P = 1 inside the disagreement region, P in (0,1], monotone in G."""
    assert query_probability(0.5, 1000.0, 0.1, 200.0, 1.0) == pytest.approx(0.07661901211425372,
                                                                             rel=1e-13)
    assert query_probability(0.05, 1000.0, 0.1, 200.0, 1.0) == 1.0
    assert query_probability(0.5, 1.0, 0.1, 200.0, 1.0) == 1.0
    assert query_probability(math.inf, 1000.0, 0.1, 200.0, 1.0) == 0.0
    values = [query_probability(G, 500.0, 0.2, 100.0, 1.0) for G in np.linspace(0.01, 5, 200)]
    assert all(0 < v <= 1 for v in values)
    assert all(a >= b for a, b in zip(values, values[1:]))


def test_absent_side_is_linear_and_derivative_is_negative():
    """[B9]-style: with a zero-coefficient dyad p is linear; p' < 0 whenever anything moves."""
    U, V, r = np.array([0.0]), np.array([0.0]), np.array([1.0])
    assert p_of_s(1.0, 0.3, 2.0, U, V, r) == pytest.approx(1.0 - 0.6)
    p0, X, U, V, r = golden_state()
    assert all(dp_ds(s, X, U, V, r) < 0 for s in np.linspace(-3, 3, 61))


def test_huge_weights_stay_finite_and_match_the_small_step_limit():
    """Random states and importance weights up to 1e6: every update is finite, squared never
    passes the label, hinge never passes the margin; small weights agree with tiny steps."""
    rng = np.random.default_rng(17)
    small = 0
    for case in range(300):
        loss = (LOGISTIC, SQUARED, HINGE)[case % 3]
        a, b = rng.normal(scale=1.5, size=2), rng.normal(scale=1.5, size=2)
        ca, cb = rng.uniform(0.5, 2.0, size=2)
        U, V, r = (np.array([v]) for v in dyad_terms(np.atleast_2d(a), np.atleast_2d(b), 0, ca, cb))
        X = float(rng.uniform(0.5, 3.0))
        p0 = float(rng.normal(scale=2.0))
        y = float(rng.choice([-1.0, 1.0])) if loss != SQUARED else float(rng.normal())
        h = 10.0 ** rng.uniform(-9, 6)  # down to weights where the first-order limit holds
        if loss == HINGE:
            s = hinge_step(p0, y, X, U, V, r, 0.5, h)
        else:
            s, capped = ode_step(loss, p0, y, X, U, V, r, 0.5, h, 1e-7, 1e-10, 100000)
            assert not capped
        assert math.isfinite(s)
        p = p_of_s(p0, s, X, U, V, r)
        assert math.isfinite(p)
        if loss == SQUARED:
            assert (p - y) * (p0 - y) >= -1e-9 and abs(p - y) <= abs(p0 - y) + 1e-9
        elif loss == HINGE:
            assert y * p <= max(1.0, y * p0) + 1e-9
        else:
            assert y * p >= y * p0 - 1e-9
        if 0.5 * h * abs(dp_ds(0.0, X, U, V, r)) < 1e-3:  # first order: s ≈ η h l'(p0, y)
            slope = 2 * (p0 - y) if loss == SQUARED else (
                -y / (1 + math.exp(y * p0)) if loss == LOGISTIC else (-y if y * p0 < 1 else 0.0))
            assert s == pytest.approx(0.5 * h * slope, rel=0.05, abs=1e-15)
            small += 1
    assert small >= 30  # the first-order check ran (it never did while h started at 1e-3)


def test_both_exponentials_from_one_expm1_keep_full_accuracy():
    """p(s) takes ``expm1(-x)`` and ``expm1(x)`` from a single ``expm1(|x|)``; the derived one
    must stay within a few ulp of mpmath everywhere, tiny, large and clamped arguments included
    (deriving from ``expm1(-|x|)`` instead would divide by 0 for ``|x| > 37``)."""
    import numba

    from pyvw_lite.learners.dyadic import EXP_CAP, expm1_pair
    mpmath = pytest.importorskip("mpmath")
    pair = numba.njit(lambda x: expm1_pair(x))
    mpmath.mp.dps = 40
    points = np.concatenate([np.linspace(-60, 60, 2001), np.geomspace(1e-300, 1e-3, 200),
                             -np.geomspace(1e-300, 1e-3, 200), [0.0, 699.9, -699.9, 701, -701]])
    for x in points:
        for got, arg in zip(pair(x), (-x, x)):
            exact = float(mpmath.expm1(min(arg, EXP_CAP)))
            assert got == pytest.approx(exact, rel=4.5e-16, abs=0.0), x
