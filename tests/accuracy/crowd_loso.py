"""Leave one source out: the batch default's candidates on the 27 shared real crowd sets.

    python tests/accuracy/crowd_loso.py [--shared DIR] [--json OUT] [--from_json]

Every set is fitted by each method of ``METHODS`` (majority vote, one-coin, batch EM, BCC,
EBCC with 10 restarts, and ``shrunk``: Dawid-Skene with each worker's confusion row shrunk
toward the population's row with a strength learned from the data), and by ``heldout``, a
truth-free choice: a seeded tenth of the answers is held out, majority vote, one-coin, BCC and
shrunk are fitted on the rest, the held-out answers are scored by each fit's predictive
log-likelihood, and the best model is refitted on all answers.  Three more models: ``bcc_vote_prior``
(BCC with its class prior held at majority vote's class shares), ``coin_shrunk`` (as ``shrunk``,
each worker's rows shrunk toward the one-coin matrix of the worker's own accuracy instead of the
population's) and ``glad`` (GLAD for K classes: item ease times worker ability); and two model
votes, ``vote3`` (BCC, GLAD, shrunk) and ``vote5`` (majority vote, BCC, EBCC, GLAD, shrunk),
each item's most frequent label among them; and ``welinder``, on two classes the
one-dimensional model of Welinder et al. (2010: item positions, worker directions and biases),
BCC on more.  Accuracy is on the tasks with a truth label;
seconds are the fit's (reading excluded; a vote's include any member it had to fit).

Candidates are the methods and the guarded rules ``X, majority below T`` (X, or majority vote
where the worker density is below T).  Sets of one source (``crowd_shared.SOURCES``) form one
fold: for each source, the candidate with the best mean over the other sources' means is scored
on the held-out source.  A rule passes if its leave-one-source-out mean is at least EBCC's and
at least majority vote's + 0.02, and no source's mean is below majority vote's - 0.01.

A measurement, not a test: pytest does not collect it.  Prints markdown, writes its JSON.
"""
from __future__ import annotations

import math
import os
import sys
import time

import numpy as np
from scipy.special import expit, gammaln

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))

from crowd_shared import ALL, measurement_parser, read_record, source_of, write_record  # noqa: E402
from pyvw_lite.crowd import baselines  # noqa: E402
from pyvw_lite.crowd.batch import batch_em  # noqa: E402
from pyvw_lite.crowd.bayes import bayes_fit  # noqa: E402
from pyvw_lite.crowd.model import CrowdConfig  # noqa: E402
from pyvw_lite.crowd.select import worker_density  # noqa: E402
from pyvw_lite.io.crowd_input import (keep_answers, known_labels, read_answers,  # noqa: E402
                                      read_gold)

METHODS = ("majority", "one_coin", "em", "bcc", "ebcc", "shrunk", "heldout", "bcc_vote_prior",
           "coin_shrunk", "glad", "vote3", "vote5", "welinder")
SCORED = ("majority", "one_coin", "bcc", "shrunk")  # what ``heldout`` chooses among
GUARDED = ("bcc", "ebcc", "shrunk", "heldout", "one_coin", "bcc_vote_prior", "coin_shrunk",
           "glad", "vote3", "vote5", "welinder")
# the model vote: each item's most frequent label among these methods' labels, a tie going to
# majority vote's label
VOTERS = dict(vote3=("bcc", "glad", "shrunk"), vote5=("majority", "bcc", "ebcc", "glad", "shrunk"))
THRESHOLDS = (0, 10, 20, 50)
FLIP_LIMITS = (0.02, 0.05, 0.1, 0.15, 0.2)  # "X unless it changes more than F of the votes"
HOLD_OUT = 0.1


def _items(data):
    return np.repeat(np.arange(data.n_items), data.ratings_per_item())


def _soft_counts(data, q):
    """counts[w, k, l]: the posterior mass of class k on worker w's answers l."""
    K, W = data.n_labels, len(data.worker_names)
    weights = q[_items(data)]
    cell = data.rating_worker * K + data.rating_label
    counts = np.empty((W, K, K))
    for k in range(K):
        counts[:, k, :] = np.bincount(cell, weights=weights[:, k],
                                      minlength=W * K).reshape(W, K)
    return counts


def _e_step(data, log_pi, log_prior):
    item = _items(data)
    log_q = np.tile(log_prior, (data.n_items, 1))
    per_answer = log_pi[data.rating_worker, :, data.rating_label]  # R x K
    for k in range(data.n_labels):
        log_q[:, k] += np.bincount(item, weights=per_answer[:, k], minlength=data.n_items)
    log_q -= log_q.max(axis=1, keepdims=True)
    q = np.exp(log_q)
    q /= q.sum(axis=1, keepdims=True)
    known = data.gold >= 0
    q[known] = np.eye(data.n_labels)[data.gold[known]]
    return q


GRID = np.exp(np.linspace(math.log(0.1), math.log(1e4), 60))


def _strength(counts_k, rows):
    """The concentration s maximising the Dirichlet-multinomial likelihood of the workers'
    (soft) counts for one true class, worker w's under Dirichlet(s * rows[w]): a grid over
    0.1..10^4."""
    n = counts_k.sum(axis=1)
    c, rows, n = counts_k[n > 0], rows[n > 0], n[n > 0]
    a = GRID[:, None, None] * rows[None, :, :]  # grid x workers x K
    value = ((gammaln(GRID)[:, None] - gammaln(n[None, :] + GRID[:, None])).sum(axis=1)
             + (gammaln(c[None, :, :] + a) - gammaln(a)).sum(axis=(1, 2)))
    return float(GRID[int(np.argmax(value))])


def _population_centre(counts):
    """Every worker's centre is the population's confusion matrix (all soft counts pooled)."""
    pooled = counts.sum(axis=0) + 1.0
    return np.broadcast_to(pooled / pooled.sum(axis=1, keepdims=True), counts.shape)


def _coin_centre(counts):
    """Worker w's centre is the one-coin matrix of w's own accuracy (its soft share of right
    answers, one pseudo-count each way): the accuracy on the diagonal, the rest spread evenly."""
    K = counts.shape[1]
    accuracy = (np.einsum("wkk->w", counts) + 1.0) / (counts.sum(axis=(1, 2)) + 2.0)
    centre = np.repeat(((1 - accuracy) / (K - 1))[:, None, None], K, axis=1).repeat(K, axis=2)
    centre[:, np.arange(K), np.arange(K)] = accuracy[:, None]
    return centre


def shrunk_fit(data, iters: int = 50, tol: float = 1e-5, centre=_population_centre,
               vote_prior: bool = False):
    """Dawid-Skene EM in which worker w's confusion row k is the posterior mean under
    Dirichlet(s_k * C_wk), C_w the worker's centre (``centre(counts)``: by default the
    population's matrix, all workers' soft counts pooled) and s_k the strength that maximises
    the workers' Dirichlet-multinomial evidence (empirical Bayes, re-estimated each iteration).
    With ``vote_prior`` the class prior stays at majority vote's class shares.  Returns (q,
    log_pi, log_prior)."""
    K = data.n_labels
    q = baselines.majority_vote(data)
    vote_shares = q[data.gold < 0].sum(axis=0) + 1.0
    for _ in range(iters):
        counts = _soft_counts(data, q)
        rows = centre(counts)
        pi = np.empty_like(counts)
        for k in range(K):
            s = _strength(counts[:, k, :], rows[:, k, :])
            pi[:, k, :] = (counts[:, k, :] + s * rows[:, k, :]) / (
                counts[:, k, :].sum(axis=1, keepdims=True) + s)
        prior = vote_shares if vote_prior else q[data.gold < 0].sum(axis=0) + 1.0
        log_prior = np.log(prior / prior.sum())
        log_pi = np.log(pi)
        new = _e_step(data, log_pi, log_prior)
        change = float(np.abs(new - q).max())
        q = new
        if change < tol:
            break
    return q, log_pi, log_prior


def glad_fit(data, iters: int = 100, tol: float = 1e-5, newton_steps: int = 25):
    """GLAD (Whitehill et al., NIPS 2009) for K classes: worker w answers item i correctly with
    probability sigmoid(a_w * exp(b_i)) (a_w the worker's ability, exp(b_i) the item's ease),
    and a wrong answer is any of the K - 1 other labels alike; priors a_w ~ N(1, 1),
    b_i ~ N(0, 1) and a learned class prior.  EM: the E-step gives each item's class
    posterior; the M-step climbs the expected log-likelihood in a and b by diagonal Newton
    steps (the expected log-likelihood of an answer is c log s + (1 - c) log(1 - s) plus a
    constant, c the posterior that it is right, so its gradient in z = a_w exp(b_i) is c - s
    and its curvature -s (1 - s)).  Returns q."""
    K, W, N = data.n_labels, len(data.worker_names), data.n_items
    item, worker, label = _items(data), data.rating_worker, data.rating_label
    q = baselines.majority_vote(data)
    a, b = np.ones(W), np.zeros(N)
    for _ in range(iters):
        right = q[item, label]  # the posterior that each answer is right
        for _ in range(newton_steps):  # a and b both stepped from the same point
            ease = np.exp(b)[item]
            scale = a[worker] * ease
            s = expit(scale)
            slope, curve = right - s, s * (1 - s)
            step_a = ((np.bincount(worker, weights=slope * ease, minlength=W) - (a - 1.0))
                      / (np.bincount(worker, weights=curve * ease ** 2, minlength=W) + 1.0))
            step_b = ((np.bincount(item, weights=slope * scale, minlength=N) - b)
                      / (np.bincount(item, weights=curve * scale ** 2, minlength=N) + 1.0))
            a += step_a
            b += np.clip(step_b, -1.0, 1.0)
        s = np.clip(expit(a[worker] * np.exp(b)[item]), 1e-9, 1 - 1e-9)
        log_right, log_wrong = np.log(s), np.log((1 - s) / (K - 1))
        prior = q[data.gold < 0].sum(axis=0) + 1.0
        log_q = np.tile(np.log(prior / prior.sum()), (N, 1))
        for k in range(K):
            log_q[:, k] += np.bincount(item, weights=np.where(label == k, log_right, log_wrong),
                                       minlength=N)
        new = np.exp(log_q - log_q.max(axis=1, keepdims=True))
        new /= new.sum(axis=1, keepdims=True)
        known = data.gold >= 0
        new[known] = np.eye(K)[data.gold[known]]
        change = float(np.abs(new - q).max())
        q = new
        if change < tol:
            break
    return q


def welinder_fit(data, spread: float = 2.0, iters: int = 200, tol: float = 1e-5,
                 newton_steps: int = 5):
    """Two classes: the one-dimensional form of Welinder et al. (NIPS 2010).  Item i sits at
    x_i ~ N(-spread, 1) if its class is 0, N(+spread, 1) if 1; worker w answers 1 with
    probability sigmoid(v_w x_i - t_w) (v_w the worker's direction, prior N(1, 1); t_w its
    bias, prior N(0, 1)).  Alternates the posterior of each item's class given x_i (and a
    learned class share) with diagonal Newton steps on x, v and t toward the joint mode, x_i's
    prior centred on its class posterior's mean.  More than two classes: BCC.  Returns q."""
    if data.n_labels != 2:
        return bayes_fit(data, subtypes=1, restarts=1).q
    N, W = data.n_items, len(data.worker_names)
    item, worker = _items(data), data.rating_worker
    said = (data.rating_label == 1).astype(float)
    positive = baselines.majority_vote(data)[:, 1]
    x, v, t = spread * (2 * positive - 1), np.ones(W), np.zeros(W)
    share = 0.5
    known = data.gold >= 0
    for _ in range(iters):
        centre = spread * (2 * positive - 1)
        for _ in range(newton_steps):  # x, v and t all stepped from the same point
            s = expit(v[worker] * x[item] - t[worker])
            slope, curve = said - s, s * (1 - s) + 1e-9
            step_x = ((np.bincount(item, weights=slope * v[worker], minlength=N) - (x - centre))
                      / (np.bincount(item, weights=curve * v[worker] ** 2, minlength=N) + 1.0))
            step_v = ((np.bincount(worker, weights=slope * x[item], minlength=W) - (v - 1.0))
                      / (np.bincount(worker, weights=curve * x[item] ** 2, minlength=W) + 1.0))
            step_t = ((-np.bincount(worker, weights=slope, minlength=W) - t)
                      / (np.bincount(worker, weights=curve, minlength=W) + 1.0))
            x += np.clip(step_x, -1.0, 1.0)
            v += np.clip(step_v, -1.0, 1.0)
            t += np.clip(step_t, -1.0, 1.0)
        new = expit(math.log(share / (1 - share)) + 2 * spread * x)  # the two Gaussians' ratio
        new[known] = data.gold[known]
        share = float(np.clip(new.mean(), 0.01, 0.99))
        change = float(np.abs(new - positive).max())
        positive = new
        if change < tol:
            break
    return np.stack([1 - positive, positive], axis=1)


def model_vote(data, labels: dict, members) -> np.ndarray:
    """Each item's most frequent label among the members' labels (``labels[m]``: items), a tie
    going to majority vote's label; one-hot posteriors."""
    K = data.n_labels
    votes = np.zeros((data.n_items, K))
    rows = np.arange(data.n_items)
    for member in members:
        votes[rows, labels[member]] += 1.0
    votes[rows, baselines.majority_vote(data).argmax(axis=1)] += 0.5
    return np.eye(K)[votes.argmax(axis=1)]


def _one_coin_log_pi(data, q):
    K, W = data.n_labels, len(data.worker_names)
    item = _items(data)
    hits = np.bincount(data.rating_worker, weights=q[item, data.rating_label], minlength=W) + 1
    seen = np.bincount(data.rating_worker, minlength=W) + 2.0
    accuracy = hits / seen
    pi = np.repeat(((1 - accuracy) / (K - 1))[:, None, None], K, axis=1).repeat(K, axis=2)
    pi[:, np.arange(K), np.arange(K)] = accuracy[:, None]
    return np.log(pi)


def predictive(method, data):
    """A fit on ``data`` as (q, log_pi[w, k, l]) for scoring held-out answers."""
    K, W = data.n_labels, len(data.worker_names)
    if method == "majority":
        q = baselines.majority_vote(data)
        pooled = _soft_counts(data, q).sum(axis=0) + 1.0
        pi = pooled / pooled.sum(axis=1, keepdims=True)
        return q, np.log(np.broadcast_to(pi, (W, K, K)))
    if method == "one_coin":
        q = baselines.one_coin_dawid_skene(data)[0]
        return q, _one_coin_log_pi(data, q)
    if method == "bcc":
        fit = bayes_fit(data, subtypes=1, restarts=1)
        return fit.q, np.log(fit.confusion())
    q, log_pi, _ = shrunk_fit(data)
    return q, log_pi


def held_out_choice(data, seed: int = 0):
    """The method of ``SCORED`` whose fit on nine tenths of the answers gives the held-out
    tenth the highest log-likelihood; each item keeps at least one answer.  Returns (method,
    scores)."""
    rng = np.random.default_rng(seed)
    u = rng.random(data.n_ratings)
    item = _items(data)
    # the answer of smallest u in each item stays
    order = np.lexsort((u, item))
    first = np.zeros(data.n_ratings, dtype=bool)
    first[order[data.item_start[:-1][data.ratings_per_item() > 0]]] = True
    held = (u < HOLD_OUT) & ~first
    train = keep_answers(data, ~held)
    scores = {}
    for method in SCORED:
        q, log_pi = predictive(method, train)
        p = np.exp(log_pi[data.rating_worker[held], :, data.rating_label[held]])
        scores[method] = float(np.log((q[item[held]] * p).sum(axis=1)).mean())
    return max(SCORED, key=lambda m: scores[m]), scores


def fit(method, data, labels=None):
    """``method``'s posteriors on ``data`` and what else it records; ``labels`` keeps each
    method's labels on this set for the model votes."""
    labels = {} if labels is None else labels
    if method in VOTERS:
        for member in VOTERS[method]:
            if member not in labels:
                labels[member] = fit(member, data, labels)[0].argmax(axis=1)
        return model_vote(data, labels, VOTERS[method]), None
    if method == "bcc_vote_prior":
        return bayes_fit(data, subtypes=1, restarts=1, prior_weight=1e4).q, None
    if method == "coin_shrunk":
        return shrunk_fit(data, centre=_coin_centre)[0], None
    if method == "glad":
        return glad_fit(data), None
    if method == "welinder":
        return welinder_fit(data), None
    if method == "majority":
        return baselines.majority_vote(data), None
    if method == "one_coin":
        return baselines.one_coin_dawid_skene(data)[0], None
    if method == "em":
        config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                             worker_map="exact")
        return batch_em(data, config).q, None
    if method == "bcc":
        return bayes_fit(data, subtypes=1, restarts=1).q, None
    if method == "ebcc":
        return bayes_fit(data, restarts=10).q, None
    if method == "shrunk":
        return shrunk_fit(data)[0], None
    chosen, scores = held_out_choice(data)
    return fit(chosen, data)[0], dict(chosen=chosen, scores=scores)


def measure(shared, rows: dict, methods) -> dict:
    for name in ALL:
        data = read_answers(os.path.join(shared, name, "answers.csv"))
        known = known_labels(data, read_gold(os.path.join(shared, name, "truth.csv")), "truth")
        scored = known >= 0
        row = rows.setdefault(name, dict(accuracy={}, seconds={}, flips={}))
        vote = baselines.majority_vote(data).argmax(axis=1)
        row.update(density=worker_density(data), answers=int(data.n_ratings),
                   labels=int(data.n_labels), source=source_of(name))
        labels = {}
        for method in [m for m in METHODS if m in methods or m not in row["accuracy"]]:
            started = time.perf_counter()
            q, extra = fit(method, data, labels)
            labels[method] = q.argmax(axis=1)
            row["seconds"][method] = time.perf_counter() - started
            row["accuracy"][method] = float((q.argmax(axis=1)[scored] == known[scored]).mean())
            row["flips"][method] = float((q.argmax(axis=1) != vote).mean())
            if extra:
                row[method] = extra
        print(f"{name}: " + ", ".join(f"{m} {row['accuracy'][m]:.4f} "
                                      f"({row['seconds'][m]:.1f}s)" for m in row["accuracy"]),
              file=sys.stderr, flush=True)
    return rows


def candidates(rows: dict) -> dict:
    """Each candidate's accuracy per set."""
    methods = [m for m in METHODS if all(m in r["accuracy"] for r in rows.values())]
    table = {m: {s: r["accuracy"][m] for s, r in rows.items()} for m in methods}
    for method in GUARDED:
        if method not in methods:
            continue
        flips = all(method in r["flips"] for r in rows.values())
        for threshold in THRESHOLDS[1:]:
            table[f"{method}, majority below {threshold}"] = {
                s: r["accuracy"]["majority" if r["density"] < threshold else method]
                for s, r in rows.items()}
        for limit in FLIP_LIMITS if flips else ():
            table[f"{method}, majority where it flips > {limit:g}"] = {
                s: r["accuracy"]["majority" if r["flips"][method] > limit else method]
                for s, r in rows.items()}
    return table


def source_means(table: dict, rows: dict) -> dict:
    sources: dict[str, list[str]] = {}
    for s in rows:
        sources.setdefault(rows[s]["source"], []).append(s)
    return {c: {g: float(np.mean([v[s] for s in names])) for g, names in sources.items()}
            for c, v in table.items()}


def loso(means: dict, allowed: list[str]) -> dict:
    """For each source: the allowed candidate with the best mean over the other sources (ties:
    the earlier), and its mean on the held-out source."""
    out = {}
    for g in next(iter(means.values())):
        others = {c: np.mean([v for h, v in means[c].items() if h != g]) for c in allowed}
        top = max(others.values())
        chosen = next(c for c in allowed if others[c] >= top - 1e-12)
        out[g] = (chosen, means[chosen][g])
    return out


def verdict(means: dict, candidate: str) -> list[str]:
    """Why a fixed candidate fails the criteria (empty: it passes)."""
    vote, ebcc = means["majority"], means.get("ebcc")
    mean = float(np.mean(list(means[candidate].values())))
    failures = []
    if ebcc is not None and mean < np.mean(list(ebcc.values())) - 1e-12:
        failures.append(f"mean {mean:.4f} < EBCC's {np.mean(list(ebcc.values())):.4f}")
    if mean < np.mean(list(vote.values())) + 0.02 - 1e-12:
        failures.append(f"mean {mean:.4f} < majority's + 0.02 "
                        f"({np.mean(list(vote.values())) + 0.02:.4f})")
    for g, v in means[candidate].items():
        if v < vote[g] - 0.01 - 1e-12:
            failures.append(f"{g} {v:.4f} < majority's {vote[g]:.4f} - 0.01")
    return failures


def report(rows: dict) -> str:
    table = candidates(rows)
    means = source_means(table, rows)
    methods = [m for m in METHODS if m in table]
    lines = ["| set | source | answers | K | density | " + " | ".join(methods)
             + " | held-out choice |", "|---" * (len(methods) + 6) + "|"]
    for s, r in rows.items():
        lines.append(f"| {s} | {r['source']} | {r['answers']:,} | {r['labels']} | "
                     f"{r['density']:g} | " + " | ".join(f"{table[m][s]:.4f}" for m in methods)
                     + f" | {r.get('heldout', {}).get('chosen', '')} |")
    lines += ["", "| source | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for g in means["majority"]:
        lines.append(f"| {g} | " + " | ".join(f"{means[m][g]:.4f}" for m in methods) + " |")
    lines.append("| **mean over sources** | " + " | ".join(
        f"**{np.mean(list(means[m].values())):.4f}**" for m in methods) + " |")
    lines.append("| worst source minus majority's | " + " | ".join(
        f"{min(means[m][g] - means['majority'][g] for g in means[m]):+.4f}" for m in methods)
        + " |")
    allowed = [c for c in table if c != "em"]
    held = loso(means, allowed)
    lines += ["", "| held-out source | candidate chosen on the other sources | its mean there |"
              " majority | EBCC |", "|---|---|---|---|---|"]
    for g, (chosen, value) in held.items():
        lines.append(f"| {g} | {chosen} | {value:.4f} | {means['majority'][g]:.4f} | "
                     f"{means['ebcc'][g]:.4f} |")
    lines.append(f"| **LOSO mean** | | **{np.mean([v for _, v in held.values()]):.4f}** | "
                 f"{np.mean(list(means['majority'].values())):.4f} | "
                 f"{np.mean(list(means['ebcc'].values())):.4f} |")
    lines += ["", "| candidate | mean over sources | worst source minus majority's | passes? | "
              "why not |", "|---|---|---|---|---|"]
    shown = [c for c in table if "," not in c or c.endswith((" below 20", " flips > 0.1"))]
    for c in shown:
        failures = verdict(means, c)
        worst = min(means[c][g] - means["majority"][g] for g in means[c])
        lines.append(f"| {c} | {np.mean(list(means[c].values())):.4f} | {worst:+.4f} | "
                     f"{'yes' if not failures else 'no'} | {'; '.join(failures)} |")
    return "\n".join(lines)


def main() -> int:
    parser = measurement_parser(__doc__, os.path.join(HERE, "crowd_loso.json"))
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="fit only these (and any a set lacks), keeping the others' "
                        "figures from --json")
    parser.add_argument("--seed_from", default=None,
                        help="start from the accuracies of crowd_lodo.py's JSON record (its "
                        "methods' fits do not depend on what changed since)")
    options = parser.parse_args()
    rows = {}
    if os.path.exists(options.json) and (options.from_json or options.methods != ",".join(
            METHODS)):
        rows = read_record(options.json)
    if options.seed_from:
        for name, old in read_record(options.seed_from)["rows"].items():
            row = rows.setdefault(name, dict(accuracy={}, seconds={}, flips={}))
            for method in ("one_coin", "em", "ebcc"):
                if method not in row["accuracy"]:
                    row["accuracy"][method] = old["accuracy"][method]
                    row["seconds"][method] = old["seconds"][method]
    if not options.from_json:
        rows = measure(options.shared, rows, options.methods.split(","))
        write_record(rows, options.json)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
