"""SPEC §E checks [E1]-[E7] and §F.2's crowd progress schedule, against our kernels."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

from pyvw_lite.crowd import kernels
from pyvw_lite.crowd.batch import batch_em
from pyvw_lite.crowd.model import CrowdConfig, CrowdModel
from pyvw_lite.crowd.online import run_online
from pyvw_lite.crowd.report import OnlineProgress
from pyvw_lite.io.crowd_input import CrowdData

# the settings of SPEC §E.1 (unit variances, nu = -1, difficulty on), which its checks assume
SPEC = dict(nu=-1.0, sigma_alpha=1.0, sigma_mu=1.0, sigma_b=1.0, learn_priorz=False,
            worker_map="exact")


def epsilon(s, t, eta0, n_items, t0, rho, sigma_alpha=1.0):
    return 1.0 - kernels.decay_fraction(float(s), float(t), eta0, rho, t0, float(n_items),
                                        sigma_alpha)


def test_E1_golden_values():
    assert epsilon(3, 1000, 1.0, 50, 10.0, 0.5) == pytest.approx(0.32400451258766316, rel=1e-14)
    assert epsilon(3, 1000, 1.0, 50, 10.0, 1.0) == pytest.approx(0.9166265651574962, rel=1e-14)
    assert epsilon(0, 394360, 1.0, 9859, 1e4, 0.5) == pytest.approx(0.89698921003491, rel=1e-12)


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.5, 1 - 1e-6, 1.0, 1 + 1e-6, 1.5])
@pytest.mark.parametrize("s,t", [(0.0, 0.5), (3.0, 40.0), (10.0, 10_010.0)])
def test_E1_matches_small_step_integration(rho, s, t):
    eta0, n_items, t0 = 2.0, 30.0, 5.0
    lam, mu = 1.7, -0.4
    grid = np.geomspace(s + t0, t + t0, 20_001) - t0  # RK4 on a geometric grid in tau + t0

    def slope(tau, value):
        return -(eta0 * (tau + t0) ** (-rho) / n_items) * (value - mu)

    value = lam
    for tau, nxt in zip(grid[:-1], grid[1:]):
        h = nxt - tau
        k1 = slope(tau, value)
        k2 = slope(tau + h / 2, value + h / 2 * k1)
        k3 = slope(tau + h / 2, value + h / 2 * k2)
        k4 = slope(tau + h, value + h * k3)
        value += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    exact = mu + epsilon(s, t, eta0, n_items, t0, rho) * (lam - mu)
    assert exact == pytest.approx(value, rel=1e-12, abs=1e-13)


def test_E1c_stable_near_rho_one():
    at_one = epsilon(5, 5000, 1.0, 50, 10.0, 1.0)
    for rho in (1 - 1e-12, 1 + 1e-12):
        assert epsilon(5, 5000, 1.0, 50, 10.0, rho) == pytest.approx(at_one, rel=1e-10)


def test_E1e_start_at_zero():
    # s + t0 = 0: I = (t + t0)^(1 - rho) / (1 - rho) for rho < 1; the slot snaps to mu for rho >= 1
    expected = math.exp(-(2.0 / 40.0) * 100.0 ** 0.5 / 0.5)
    assert epsilon(0, 100, 2.0, 40, 0.0, 0.5) == pytest.approx(expected, rel=1e-14)
    assert epsilon(0, 100, 2.0, 40, 0.0, 1.0) == 0.0


def test_E2_composition():
    for rho in (0.2, 0.5, 1.0, 1.3):
        whole = epsilon(2, 900, 1.5, 20, 3.0, rho)
        parts = epsilon(2, 77, 1.5, 20, 3.0, rho) * epsilon(77, 900, 1.5, 20, 3.0, rho)
        assert parts == pytest.approx(whole, rel=1e-13)


def test_rho_one_needs_positive_initial_t():
    with pytest.raises(ValueError, match="initial_t"):
        CrowdConfig(n_labels=3, rho=1.0, initial_t=0.0)


def test_E7_lazy_equals_dense_when_mu_is_frozen():
    rng = np.random.default_rng(8)
    K = 2
    config = CrowdConfig(n_labels=K, eta=1.0, rho=0.6, initial_t=5.0, sigma_mu=0.0, nu=-1.0,
                         sigma_alpha=1.0)
    model = CrowdModel(config, n_slots=4)
    lazy = model.alpha
    lazy[:, 0, 1] = [0.5, -1.0, 2.0, 0.0]
    dense = lazy.copy()
    stamp = np.zeros(4, dtype=np.int64)
    mu = model.mu
    for t in range(1, 200):
        fraction = kernels.decay_fraction(t - 1.0, float(t), 1.0, 0.6, 5.0, 20.0, 1.0)
        dense[:, 0, 1] += fraction * (mu[0, 1] - dense[:, 0, 1])
        m = int(rng.integers(4))
        kernels.catch_up(lazy, mu, m, stamp, t, 1.0, 0.6, 5.0, 20.0, 1.0, 0.0, False)
        push = rng.normal() * 0.1
        lazy[m, 0, 1] += push
        dense[m, 0, 1] += push
    kernels.catch_up_all(lazy, mu, stamp, 199, 1.0, 0.6, 5.0, 20.0, 1.0, 0.0, False)
    assert np.max(np.abs(lazy - dense)) < 1e-12


def synthetic_items(seed=6, n_items=60, n_workers=6, K=3, per_item=4, gold_every=0):
    """A small Dawid-Skene world as CrowdData (item blocks, exact worker ids 0..n_workers-1)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, K, n_items)
    accuracy = rng.uniform(0.55, 0.9, n_workers)
    starts, workers, labels = [0], [], []
    for i in range(n_items):
        chosen = rng.choice(n_workers, size=per_item, replace=False)
        for w in chosen:
            right = rng.random() < accuracy[w]
            labels.append(int(truth[i]) if right else int((truth[i] + rng.integers(1, K)) % K))
            workers.append(int(w))
        starts.append(len(labels))
    gold = np.full(n_items, -1, dtype=np.int64)
    if gold_every:
        gold[::gold_every] = truth[::gold_every]
    return CrowdData(task_names=np.array([f"i{i}" for i in range(n_items)], dtype=object),
                     worker_names=np.array([str(w) for w in range(n_workers)], dtype=object),
                     label_names=[str(k) for k in range(K)],
                     item_start=np.array(starts, dtype=np.int64),
                     rating_worker=np.array(workers, dtype=np.int64),
                     rating_label=np.array(labels, dtype=np.int64), gold=gold), truth


def slot_objective(alpha, mu, m, data, q, b, layout, sigma_alpha, derivatives=False):
    """Slot m's objective with its gradient and Hessian (one observation per rating)."""
    cell_param, param_k, param_l = layout
    rating_item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    mine = np.flatnonzero(data.rating_worker == m)
    P = param_k.size
    grad, hess = np.zeros(P), np.zeros((P, P))
    value = kernels._slot_objective(alpha, mu, m, 0, mine.size, rating_item[mine],
                                    data.rating_label[mine], q, np.exp(b), cell_param, param_k,
                                    param_l, 1.0 / sigma_alpha ** 2, grad, hess, derivatives)
    return value, grad, hess


@pytest.mark.parametrize("symmetric", [False, True])
def test_E3_gradient_and_hessian_match_finite_differences(symmetric):
    data, _ = synthetic_items()
    rng = np.random.default_rng(1)
    config = CrowdConfig(n_labels=3, symmetric=symmetric, **SPEC)
    model = CrowdModel(config, n_slots=6)
    layout = model.layout
    _, param_k, param_l = layout
    for p in range(param_k.size):  # a random (symmetric when asked) point
        for m in range(6):
            value = rng.normal(-1.0, 0.5)
            model.alpha[m, param_k[p], param_l[p]] = value
            if symmetric:
                model.alpha[m, param_l[p], param_k[p]] = value
    q = rng.dirichlet(np.ones(3), size=data.n_items)
    b = rng.normal(0.0, 0.4, size=data.n_items)
    m = 2
    _, grad, hess = slot_objective(model.alpha, model.mu, m, data, q, b, layout, 1.0, True)
    step = 1e-6
    for p in range(param_k.size):
        def shifted(delta):
            alpha = model.alpha.copy()
            alpha[m, param_k[p], param_l[p]] += delta
            if symmetric:
                alpha[m, param_l[p], param_k[p]] += delta
            value, g, _ = slot_objective(alpha, model.mu, m, data, q, b, layout, 1.0, True)
            return value, g
        (up, g_up), (down, g_down) = shifted(step), shifted(-step)
        assert (up - down) / (2 * step) == pytest.approx(grad[p], abs=2e-7)
        np.testing.assert_allclose((g_up - g_down) / (2 * step), hess[p], atol=2e-6)


def item_F(alpha, data, i, b, q, log_prior, kappa=0.0, sigma_b=1.0):
    """F-hat_i for an arbitrary q (SPEC §E.2), from the per-class log likelihoods."""
    K = q.size
    LL, D1, D2 = np.empty(K), np.empty(K), np.empty(K)
    probs = np.empty((data.ratings_per_item()[i], K, K))
    kernels._item_terms(alpha, data.item_start[i], data.item_start[i + 1], data.rating_worker,
                        data.rating_label, math.exp(b), K, LL, D1, D2, probs, True)
    entropy = -sum(value * math.log(value) for value in q if value > 0)
    return float(q @ (log_prior + LL)) + entropy - 0.5 * ((b - kappa) / sigma_b) ** 2


def test_E4_inner_em_is_monotone_and_the_e_step_optimal():
    data, _ = synthetic_items()
    rng = np.random.default_rng(2)
    alpha = -1.0 + 0.6 * rng.normal(size=(6, 3, 3))
    for k in range(3):
        alpha[:, k, k] = 0.0
    log_prior = np.log(np.full(3, 1 / 3))
    for i in range(20):
        q = np.empty(3)
        LL, D1, D2 = np.empty(3), np.empty(3), np.empty(3)
        start, end = data.item_start[i], data.item_start[i + 1]
        trace = []
        b = 0.0
        for rounds in range(1, 6):  # each extra round may only raise F-hat
            b, first, last = kernels.item_inner_em(alpha, start, end, data.rating_worker,
                                                   data.rating_label, 3, log_prior, -1, 0.0, 0.0,
                                                   1.0, rounds, q, LL, D1, D2,
                                                   np.empty((end - start, 3, 3)))
            trace.append(last)
        assert all(later >= earlier - 1e-12 for earlier, later in zip(trace, trace[1:]))
        assert trace[0] >= first - 1e-12
        best = item_F(alpha, data, i, b, q, log_prior)
        assert best == pytest.approx(trace[-1], abs=1e-9)
        for _ in range(20):
            other = q * np.exp(0.3 * rng.normal(size=3))
            assert item_F(alpha, data, i, b, other / other.sum(), log_prior) <= best + 1e-10


@pytest.mark.parametrize("settings", [dict(), dict(symmetric=True), dict(learn_priorz=True),
                                      dict(sigma_b=0.0), dict(sigma_mu=0.0)],
                         ids=["spec", "symmetric", "learn_priorz", "no_difficulty", "no_hyper"])
def test_E5_batch_objective_never_decreases(settings):
    data, _ = synthetic_items(gold_every=7)
    config = CrowdConfig(n_labels=3, **{**SPEC, **settings})
    result = batch_em(data, config, max_iters=300, tol=1e-12)
    F = np.array(result.objective)
    assert len(F) > 5
    assert np.all(np.diff(F) >= -1e-9 * np.abs(F[1:]))
    assert F[-1] > F[0]


def test_E5b_hypermean_closed_form():
    data, _ = synthetic_items()
    result = batch_em(data, CrowdConfig(n_labels=3, **SPEC), max_iters=50)
    model = result.model
    expected = (model.nu + model.alpha.sum(axis=0)) / (model.n_slots + 1)
    np.testing.assert_allclose(model.mu, expected, atol=1e-12)


def shuffled_stream(data: CrowdData, passes: int, rng) -> CrowdData:
    """The items of ``data`` in a fresh random order per pass, as one stream of blocks."""
    blocks = []
    for _ in range(passes):
        blocks.extend(rng.permutation(data.n_items).tolist())
    lengths = data.ratings_per_item()[blocks]
    starts = np.zeros(len(blocks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    pick = np.concatenate([np.arange(data.item_start[i], data.item_start[i + 1]) for i in blocks])
    return CrowdData(task_names=data.task_names[blocks], worker_names=data.worker_names,
                     label_names=data.label_names, item_start=starts,
                     rating_worker=data.rating_worker[pick], rating_label=data.rating_label[pick],
                     gold=data.gold[blocks])


def objective_at(model: CrowdModel, data: CrowdData) -> tuple[float, np.ndarray]:
    """max over b and q of F at the model's worker parameters, and the labels there."""
    K = model.config.n_labels
    q = np.empty((data.n_items, K))
    LL, D1, D2 = np.empty(K), np.empty(K), np.empty(K)
    total = 0.0
    log_prior = model.config.log_priorz
    for i in range(data.n_items):
        _, _, value = kernels.item_inner_em(model.alpha, data.item_start[i], data.item_start[i + 1],
                                            data.rating_worker, data.rating_label, K, log_prior,
                                            data.gold[i], 0.0, 0.0, 1.0, 50, q[i], LL, D1, D2,
                                            np.empty((data.ratings_per_item()[i], K, K)))
        total += value
    _, param_k, param_l = model.layout
    total += kernels.prior_log_density(model.alpha, model.mu, model.nu,
                                       np.ones(model.n_slots, dtype=np.bool_), param_k, param_l,
                                       1.0, 1.0)
    return total, q.argmax(axis=1)


def test_E6_online_em_tracks_the_hypermean_and_approaches_batch():
    data, _ = synthetic_items()
    batch = batch_em(data, CrowdConfig(n_labels=3, **SPEC), max_iters=2000, tol=1e-13)
    F_batch, batch_labels = objective_at(batch.model, data)
    config = CrowdConfig(n_labels=3, eta=4.0, initial_t=100.0, rho=0.6, n_items=data.n_items,
                         **SPEC)
    model = CrowdModel(config, n_slots=6)
    model.slots_for(data)  # exact slots 0..5 in order, as in the batch fit
    rng = np.random.default_rng(7)
    early = run_online(shuffled_stream(data, 25, rng), model)
    # [E6] mu = (nu + sum alpha) / (M + 1) holds after every lazy update
    np.testing.assert_allclose(model.mu, (model.nu + model.alpha.sum(axis=0)) / 7, atol=1e-10)
    F_25, _ = objective_at(model, data)
    late = run_online(shuffled_stream(data, 125, rng), model)
    F_150, labels = objective_at(model, data)
    gap_25 = (F_batch - F_25) / abs(F_batch)
    gap_150 = (F_batch - F_150) / abs(F_batch)
    assert 0 <= gap_150 < 1e-4 and gap_150 < gap_25  # [E6b]
    assert np.mean(labels == batch_labels) >= 0.98
    assert np.max(np.abs(model.alpha - batch.model.alpha)) < 0.05
    assert late.f[-data.n_items:].mean() > early.f[:data.n_items].mean()  # [E6c]


def test_gold_items_are_one_hot_and_train_workers():
    data, truth = synthetic_items(gold_every=3)
    with_gold = batch_em(data, CrowdConfig(n_labels=3, **SPEC))
    known = data.gold >= 0
    np.testing.assert_array_equal(with_gold.q[known], np.eye(3)[data.gold[known]])
    data.gold[:] = -1
    without = batch_em(data, CrowdConfig(n_labels=3, **SPEC))
    assert np.max(np.abs(with_gold.model.alpha - without.model.alpha)) > 1e-3


def test_test_only_leaves_the_model_byte_identical(tmp_path):
    data, _ = synthetic_items()
    model = CrowdModel(CrowdConfig(n_labels=3, worker_map="hash", n_worker_bits=8))
    run_online(data, model, passes=2)
    before = tmp_path / "before.pvw"
    after = tmp_path / "after.pvw"
    model.save(str(before))
    loaded = CrowdModel.load(str(before))
    result = run_online(data, loaded, test_only=True)
    loaded.save(str(after))
    assert before.read_bytes() == after.read_bytes()
    assert np.isfinite(result.f).all()


def test_online_progress_schedule_matches_the_seed():
    out = io.StringIO()
    progress = OnlineProgress(out)
    total = 300
    f = -np.linspace(1.0, 0.5, total)
    for start in range(0, total, 37):  # chunk boundaries must not matter
        stop = min(start + 37, total)
        progress.account(f[start:stop], np.full(stop - start, -1), np.zeros(stop - start, int),
                         np.full(stop - start, 5))
    progress.finish()
    counters = [int(line.split()[2]) for line in out.getvalue().splitlines()]
    assert counters == [2, 5, 10, 19, 36, 69, 134, 263, 300]
    assert [2 ** k + k - 1 for k in range(1, 9)] == [2, 5, 10, 19, 36, 69, 134, 263]
    first = out.getvalue().splitlines()[0]
    assert first == f"{f[:2].mean():<10.6f} {f[:2].mean():<10.6f} {2:10d} {-1:10d} {0:10d} {5:10d}"
