"""crowd-kit-style aggregators: ``fit`` / ``fit_predict`` / ``fit_predict_proba`` on a table of
``task``, ``worker``, ``label`` answers; fitted state ends in ``_``.

The answers come as a pandas DataFrame, a dict or tuple of three arrays, or an n x 3 array of
(task, worker, label) rows.  Results are crowd-kit's pandas objects: ``labels_`` a Series
indexed by task, ``probas_`` a task x label DataFrame, ``errors_`` a DataFrame indexed by
(worker, observed label) with a column per true label.  Without pandas (an optional
dependency) they are numpy arrays aligned with ``tasks_`` (and ``classes_``).  Gold labels
(``true_labels``, a Series or a dict task -> label) fix those items' labels.

Example::

    >>> from pyvw_lite.api.crowd import DawidSkene
    >>> answers = {"task": ["a", "a", "a", "b", "b", "b"], "worker": ["u", "v", "w"] * 2,
    ...            "label": ["x", "x", "y", "y", "y", "y"]}
    >>> DawidSkene().fit_predict(answers).to_dict()
    {'a': 'x', 'b': 'y'}
"""
from __future__ import annotations

import numpy as np

from ..crowd.defaults import AUTO_DEFAULTS, DEFAULTS, EBCC_DEFAULTS
from ..io.crowd_input import CrowdData, from_arrays
from .arrays import check_numbers

__all__ = ["Auto", "BCC", "BatchEM", "DawidSkene", "EBCC", "MajorityVote", "OneCoinDawidSkene",
           "OnlineEM"]

_CONFIG_FIELDS = ("priorz", "learn_priorz", "symmetric", "nu", "sigma_alpha", "sigma_mu",
                  "sigma_b", "kappa", "worker_map", "n_worker_bits", "eta", "rho", "initial_t",
                  "n_items")


def _column(values) -> np.ndarray:
    """An array of ``values``; a list keeps its Python types (numpy would turn ``[1, "1"]``
    into two strings ``"1"`` before anyone could tell them apart)."""
    return values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)


def _columns(data):
    """(tasks, workers, labels) from a DataFrame, a mapping, a 3-tuple or n x 3 rows."""
    if hasattr(data, "columns") and hasattr(data, "to_numpy"):
        missing = [name for name in ("task", "worker", "label") if name not in data.columns]
        if missing:
            raise ValueError(f"answers need columns task, worker, label (missing {missing[0]!r})")
        return data["task"].to_numpy(), data["worker"].to_numpy(), data["label"].to_numpy()
    if isinstance(data, dict):
        return _column(data["task"]), _column(data["worker"]), _column(data["label"])
    if isinstance(data, np.ndarray) and data.ndim == 2:  # rows of (task, worker, label)
        if data.shape[1] != 3:
            raise ValueError(f"an answers array has 3 columns (task, worker, label), not "
                             f"{data.shape[1]}")
        return data[:, 0], data[:, 1], data[:, 2]
    tasks, workers, labels = data
    return _column(tasks), _column(workers), _column(labels)


def _pandas():
    """The pandas module, or None where it is not installed (results are then numpy)."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _label_types(labels: np.ndarray, known: dict) -> dict:
    """Label text -> the value the caller gave (after ``known``, earlier batches' types).  Two
    values with one text (``1`` and ``"1"``) are refused: crowd-kit and pandas keep them apart,
    and labels are compared as text here."""
    types = dict(known)
    # first-seen order, no sorting: a missing (NaN) label among strings must reach the
    # located error of from_arrays, not a comparison error here
    for value in dict.fromkeys(labels.tolist()):
        text = str(value)
        if text in types and not _same_label(types[text], value):
            raise ValueError(f"labels {types[text]!r} ({type(types[text]).__name__}) and "
                             f"{value!r} ({type(value).__name__}) read the same: give every "
                             "label as one type")
        types.setdefault(text, value)
    return types


def _same_label(first, second) -> bool:
    """Whether two labels with one text are one label (NaN and NaN; not ``1`` and ``"1"``)."""
    return isinstance(first, str) == isinstance(second, str)


def _gold(true_labels) -> dict | None:
    if true_labels is None:
        return None
    if hasattr(true_labels, "items"):
        return {task: str(label) for task, label in true_labels.items()}
    raise ValueError("true_labels must map task -> label (a pandas Series or a dict)")


class _Aggregator:
    """Shared plumbing: input conversion, the fitted attributes, and scikit-learn's parameter
    protocol (``get_params``, ``set_params``, a ``repr`` naming the non-default ones), which
    crowd-kit's aggregators follow too."""

    @classmethod
    def _parameters(cls) -> dict:
        """Name -> default of every parameter of the class's constructor (its signature, as
        scikit-learn reads it; classes taking ``**settings`` publish the full one)."""
        import inspect
        return {name: parameter.default
                for name, parameter in inspect.signature(cls.__init__).parameters.items()
                if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL,
                                                             parameter.VAR_KEYWORD)}

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in self._parameters()}

    def set_params(self, **values):
        known = self._parameters()
        for name, value in values.items():
            if name not in known:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r} (parameters: "
                                 f"{', '.join(known)})")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        changed = [f"{name}={getattr(self, name)!r}" for name, default in
                   self._parameters().items() if getattr(self, name) != default]
        return f"{type(self).__name__}({', '.join(changed)})"

    def _prepare(self, data, true_labels, label_names=None) -> CrowdData:
        tasks, workers, labels = _columns(data)
        known = getattr(self, "_label_types", {}) if label_names is not None else {}
        self._label_types = _label_types(labels, known)
        data = from_arrays(tasks, workers, labels, gold=_gold(true_labels),
                           label_names=label_names)
        self.n_gold_ = int((data.gold >= 0).sum())  # gold items that matched a task
        return data

    def _publish(self, data: CrowdData, q: np.ndarray) -> None:
        self.tasks_ = data.task_names
        self.classes_ = list(data.label_names)
        self.labels_, self.probas_ = self._task_results(data.task_names, data.label_names, q)

    def _task_results(self, tasks, label_names, q: np.ndarray):
        """crowd-kit's ``labels_`` (Series ``agg_label`` by ``task``: each task's most probable
        label) and ``probas_`` (task x ``label``); numpy arrays without pandas."""
        labels = np.asarray(self._typed(label_names))[q.argmax(axis=1)]
        pd = _pandas()
        if pd is None:
            return labels, q
        index = pd.Index(tasks, name="task")
        columns = pd.Index(self._typed(label_names), name="label")
        return (pd.Series(labels, index=index, name="agg_label"),
                pd.DataFrame(q, index=index, columns=columns))

    def _publish_workers(self, data: CrowdData, matrices: np.ndarray, prior: np.ndarray) -> None:
        """``errors_`` from ``matrices[w, true, observed]`` (each row sums to 1) in crowd-kit's
        layout: rows (worker, observed label), a column per true label, so that each worker's
        column sums to 1 and ``errors_.loc[(w, observed), true]`` is P(observed | true) for
        worker w.  Every label has a row, including labels a worker never gave (crowd-kit lists
        only the pairs it saw; here the prior gives the others a probability).  ``priors_``:
        the class prior.  Without pandas, ``errors_[w, observed, true]``."""
        errors = matrices.transpose(0, 2, 1)
        pd = _pandas()
        if pd is None:
            self.errors_, self.priors_ = errors, prior
            return
        names = self._typed(data.label_names)
        index = pd.MultiIndex.from_product([data.worker_names, names], names=["worker", "label"])
        self.errors_ = pd.DataFrame(errors.reshape(-1, len(names)), index=index, columns=names)
        self.priors_ = pd.Series(prior, index=pd.Index(names, name="label"), name="prior")

    def _publish_skills(self, data: CrowdData, skills: np.ndarray) -> None:
        """``skills_``: one number per worker, a Series ``skill`` indexed by ``worker``."""
        pd = _pandas()
        self.skills_ = skills if pd is None else pd.Series(
            skills, index=pd.Index(data.worker_names, name="worker"), name="skill")

    def _typed(self, names):
        """Label values as the caller gave them (numbers stay numbers)."""
        return [self._label_types.get(name, name) for name in names]

    def fit_predict(self, data, true_labels=None):
        return self.fit(data, true_labels).labels_

    def fit_predict_proba(self, data, true_labels=None):
        return self.fit(data, true_labels).probas_


def _answered_item(data: CrowdData) -> np.ndarray:
    """The item of each answer (``data.rating_*`` order)."""
    return np.repeat(np.arange(data.n_items), data.ratings_per_item())


class MajorityVote(_Aggregator):
    """The most frequent answer per task (ties: see ``baselines.majority_vote``), or with
    ``skills`` (worker -> weight, crowd-kit's weighted vote) the label with the largest sum of
    its workers' skills.  ``skills_``, as crowd-kit's: the share of each worker's answers that
    equal the task's ``labels_``."""

    def fit(self, data, skills=None, true_labels=None):
        prepared = self._prepare(data, true_labels)
        return self._fit_prepared(prepared, skills)

    def fit_predict(self, data, skills=None, true_labels=None):
        return self.fit(data, skills, true_labels).labels_

    def fit_predict_proba(self, data, skills=None, true_labels=None):
        return self.fit(data, skills, true_labels).probas_

    def _fit_prepared(self, data: CrowdData, skills=None):
        from ..crowd.baselines import majority_vote
        q = majority_vote(data) if skills is None else _weighted_vote(data, skills)
        self._publish(data, q)
        agrees = data.rating_label == q.argmax(axis=1)[_answered_item(data)]
        answers = np.bincount(data.rating_worker, minlength=len(data.worker_names))
        self._publish_skills(data, np.bincount(data.rating_worker, weights=agrees,
                                               minlength=answers.size) / np.maximum(answers, 1))
        return self


def _weighted_vote(data: CrowdData, skills) -> np.ndarray:
    """Each label's share of the skill behind it per task (gold tasks: one-hot)."""
    if not hasattr(skills, "get"):
        raise ValueError("skills must map worker -> weight (a pandas Series or a dict)")
    weight = []
    for worker in data.worker_names.tolist():
        value = skills.get(worker)
        try:
            check_numbers(f"skills[{worker!r}]", np.array([float(value)]), weights=True)
        except (TypeError, ValueError):
            raise ValueError(f"skills has no finite, non-negative weight within float32 for "
                             f"worker {worker!r} ({value!r})") from None
        weight.append(float(value))
    q = np.zeros((data.n_items, data.n_labels))
    np.add.at(q, (_answered_item(data), data.rating_label),
              np.asarray(weight)[data.rating_worker])
    total = q.sum(axis=1, keepdims=True)
    q = np.divide(q, total, out=np.full_like(q, 1.0 / data.n_labels), where=total > 0)
    gold = data.gold >= 0
    q[gold] = np.eye(data.n_labels)[data.gold[gold]]
    return q


class OneCoinDawidSkene(_Aggregator):
    """One accuracy per worker, errors spread uniformly over the other labels.

    ``skills_`` holds each worker's accuracy, ``errors_`` the confusion matrices it implies
    (crowd-kit's layout) and ``priors_`` the class prior, all as the final posteriors give
    them: accuracy (1 + expected right answers) / (2 + answers), a Beta(2, 2) prior's MAP,
    and the class prior with one pseudo-task per class (the fit's own M-step)."""

    def __init__(self, n_iter: int = 100, tol: float = 1e-7):
        self.n_iter = n_iter
        self.tol = tol

    def fit(self, data, true_labels=None):
        from ..crowd.baselines import one_coin_dawid_skene
        prepared = self._prepare(data, true_labels)
        q, self.n_iter_ = one_coin_dawid_skene(prepared, self.n_iter, self.tol)
        self._publish(prepared, q)
        K, W = prepared.n_labels, len(prepared.worker_names)
        right = q[_answered_item(prepared), prepared.rating_label]
        skills = (1.0 + np.bincount(prepared.rating_worker, weights=right, minlength=W)) / \
            (2.0 + np.bincount(prepared.rating_worker, minlength=W))
        self._publish_skills(prepared, skills)
        wrong = (1.0 - skills) / (K - 1)
        matrices = np.repeat(wrong[:, None, None], K, axis=1).repeat(K, axis=2)
        matrices[:, np.arange(K), np.arange(K)] = skills[:, None]
        prior = 1.0 + q.sum(axis=0)
        self._publish_workers(prepared, matrices, prior / prior.sum())
        return self


class _NominalModel(_Aggregator):
    def __init__(self, *, priorz=None, learn_priorz: bool = DEFAULTS["learn_priorz"],
                 symmetric: bool = DEFAULTS["symmetric"], nu: float = DEFAULTS["nu"],
                 sigma_alpha: float = DEFAULTS["sigma_alpha"],
                 sigma_mu: float = DEFAULTS["sigma_mu"], sigma_b: float = DEFAULTS["sigma_b"],
                 kappa: float = DEFAULTS["kappa"], worker_map: str | None = None,
                 n_worker_bits: int = DEFAULTS["n_worker_bits"], eta: float = DEFAULTS["eta"],
                 rho: float = DEFAULTS["rho"], initial_t: float = DEFAULTS["initial_t"],
                 n_items: int = DEFAULTS["n_items"]):
        self.priorz = priorz
        self.learn_priorz = learn_priorz
        self.symmetric = symmetric
        self.nu = nu
        self.sigma_alpha = sigma_alpha
        self.sigma_mu = sigma_mu
        self.sigma_b = sigma_b
        self.kappa = kappa
        self.worker_map = worker_map
        self.n_worker_bits = n_worker_bits
        self.eta = eta
        self.rho = rho
        self.initial_t = initial_t
        self.n_items = n_items

    def _config(self, data: CrowdData, default_map: str):
        from ..crowd.model import CrowdConfig
        values = {name: getattr(self, name) for name in _CONFIG_FIELDS}
        values["priorz"] = list(values["priorz"] or [])
        values["worker_map"] = values["worker_map"] or default_map
        return CrowdConfig(n_labels=data.n_labels, label_names=data.label_names, **values)

    def _publish_model(self, data: CrowdData, q: np.ndarray) -> None:
        from ..crowd.model import confusion
        self._publish(data, q)
        model = self.model_
        slots = model.worker_slots(data.worker_names, grow=False)
        matrices = confusion(model.alpha[slots])
        prior = np.exp(model.theta - model.theta.max())
        self._publish_workers(data, matrices, prior / prior.sum())


def _with_settings(cls):
    """Give ``cls.__init__(own..., **settings)`` the signature it really has: its own
    parameters, then every keyword of the nominal model's (scikit-learn's get_params, clone and
    checks read it, and refuse ``**kwargs``)."""
    import inspect
    own = [p for p in inspect.signature(cls.__init__).parameters.values()
           if p.kind != p.VAR_KEYWORD]
    shared = [p.replace(kind=p.KEYWORD_ONLY) for name, p in
              inspect.signature(_NominalModel.__init__).parameters.items() if name != "self"]
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
    __init__.__signature__ = inspect.Signature(own + shared)
    __init__.__doc__ = init.__doc__
    cls.__init__ = __init__
    return cls


@_with_settings
class BatchEM(_NominalModel):
    """Batch MAP-EM of the nominal label model: Dawid-Skene confusion matrices with
    a Gaussian prior and hyperprior, learned class prior, optional item difficulty."""

    def __init__(self, n_iter: int = DEFAULTS["max_iters"], tol: float = DEFAULTS["tol"],
                 **settings):
        super().__init__(**settings)
        self.n_iter = n_iter
        self.tol = tol

    def fit(self, data, true_labels=None):
        from ..crowd.batch import batch_em
        prepared = self._prepare(data, true_labels)
        result = batch_em(prepared, self._config(prepared, "exact"), max_iters=self.n_iter,
                          tol=self.tol)
        self.model_ = result.model
        self.loss_history_ = [-value for value in result.objective]
        self.difficulty_ = np.exp(result.b)
        self._publish_model(prepared, result.q)
        return self


class DawidSkene(BatchEM):
    """Dawid and Skene's model (a confusion matrix per worker and a class prior) fitted by EM,
    under crowd-kit's name: :class:`BatchEM` with its defaults.

    As in crowd-kit: ``n_iter``, ``tol``, ``true_labels`` (gold), ``labels_``, ``probas_``,
    ``priors_``, ``errors_`` (rows (worker, observed label), a column per true label),
    ``loss_history_``.  Unlike crowd-kit's maximum-likelihood M-step, the confusion matrices
    have a prior (BatchEM's), so a worker's few answers do not give probabilities of 0 or 1,
    and crowd-kit's ``initial_error_strategy`` is not taken (EM starts from the vote shares).
    """


@_with_settings
class OnlineEM(_NominalModel):
    """Online EM with hashed worker slots and the lazy hyperprior; ``partial_fit``
    continues on new answers with the same model.  ``labels_`` come from the model after the
    passes; ``progressive_`` holds each item's progressive F-hat_i / n_i of the last pass."""

    def __init__(self, passes: int = 1, **settings):
        super().__init__(**settings)
        self.passes = passes

    def fit(self, data, true_labels=None):
        if hasattr(self, "model_"):
            del self.model_
        self._seen = {}
        return self.partial_fit(data, true_labels)

    def partial_fit(self, data, true_labels=None):
        """Learn from more answers with the same model.  ``labels_``/``probas_`` then cover every
        task seen since ``fit``: a task of this batch by the model after it, an earlier task
        by the model after the batch that last had its answers (``predict`` labels any tasks
        by the current model)."""
        from ..crowd.model import CrowdModel
        from ..crowd.online import run_online
        existing = getattr(self, "model_", None)
        prepared = self._prepare(data, true_labels,
                                 label_names=existing.config.label_names if existing else None)
        if existing is None:
            self.model_ = CrowdModel(self._config(prepared, "hash"))
            self._seen = {}
        self.progressive_ = run_online(prepared, self.model_, passes=self.passes).f
        final = run_online(prepared, self.model_, test_only=True)  # labels from the final model
        self._publish_model(prepared, final.q)
        seen = getattr(self, "_seen", {})
        seen.update(zip(prepared.task_names, final.q))
        self._seen = seen
        if len(seen) > len(prepared.task_names):
            self._publish(_Tasks(list(seen), prepared.label_names),
                          np.array(list(seen.values())))
        return self

    def predict_proba(self, data):
        """Each task's posterior under the current model, which is not changed."""
        return self._predicted(data)[1]

    def predict(self, data):
        """Each task's most probable label under the current model, which is not changed."""
        return self._predicted(data)[0]

    def _predicted(self, data):
        from ..crowd.online import run_online
        if getattr(self, "model_", None) is None:
            raise ValueError("OnlineEM is not fitted: call fit or partial_fit first")
        names = self.model_.config.label_names
        prepared = self._prepare(data, None, label_names=names)
        q = run_online(prepared, self.model_, test_only=True).q
        return self._task_results(prepared.task_names, names, q)


class _Tasks:
    """The two fields :meth:`_Aggregator._publish` reads, for tasks from several batches."""

    def __init__(self, task_names, label_names):
        self.task_names = task_names
        self.label_names = label_names



class EBCC(_Aggregator):
    """Enhanced Bayesian classifier combination (Li, Rubinstein & Cohn, ICML 2019): each class
    has ``subtypes`` subtypes with their own worker confusion rows, which lets workers' errors
    be correlated; mean-field variational inference, the best evidence bound of ``restarts``
    seeded restarts.  ``errors_`` holds each worker's expected confusion matrix (subtypes
    weighted by their share of the class), ``elbo_`` the evidence lower bound kept."""

    def __init__(self, subtypes: int = EBCC_DEFAULTS["subtypes"],
                 restarts: int = EBCC_DEFAULTS["restarts"], a_pi: float = EBCC_DEFAULTS["a_pi"],
                 a_v: float = EBCC_DEFAULTS["a_v"], b_v: float = EBCC_DEFAULTS["b_v"],
                 n_iter: int = EBCC_DEFAULTS["max_iters"], tol: float = EBCC_DEFAULTS["tol"],
                 seed: int = EBCC_DEFAULTS["seed"],
                 empirical_prior: bool = EBCC_DEFAULTS["empirical_prior"]):
        self.subtypes = subtypes
        self.restarts = restarts
        self.a_pi = a_pi
        self.a_v = a_v
        self.b_v = b_v
        self.n_iter = n_iter
        self.tol = tol
        self.seed = seed
        self.empirical_prior = empirical_prior

    def fit(self, data, true_labels=None):
        return self._fit_prepared(self._prepare(data, true_labels))

    def _fit_prepared(self, prepared: CrowdData):
        from ..crowd.bayes import bayes_fit
        result = bayes_fit(prepared, subtypes=self.subtypes, restarts=self.restarts,
                           a_pi=self.a_pi, a_v=self.a_v, b_v=self.b_v, max_iters=self.n_iter,
                           tol=self.tol, seed=self.seed, empirical_prior=self.empirical_prior)
        self.result_ = result
        self.elbo_ = result.elbo
        self.n_iter_ = result.iterations
        self._publish(prepared, result.q)
        self._publish_workers(prepared, result.confusion(),
                              result.class_dirichlet / result.class_dirichlet.sum())
        return self


class BCC(EBCC):
    """Bayesian classifier combination (Kim & Ghahramani 2012): Dawid-Skene confusion matrices
    under Dirichlet priors, mean-field variational inference (EBCC with one subtype)."""

    def __init__(self, a_v: float = EBCC_DEFAULTS["a_v"], b_v: float = EBCC_DEFAULTS["b_v"],
                 n_iter: int = EBCC_DEFAULTS["max_iters"], tol: float = EBCC_DEFAULTS["tol"],
                 empirical_prior: bool = EBCC_DEFAULTS["empirical_prior"]):
        super().__init__(subtypes=1, restarts=1, a_v=a_v, b_v=b_v, n_iter=n_iter, tol=tol,
                         empirical_prior=empirical_prior)


class Auto(_Aggregator):
    """The command line's default method (``pyvw-lite crowd --batch``, ``--method auto``): BCC,
    or majority vote where workers answered too few items to learn their confusion matrices
    (the median answer comes from a worker with fewer than ``sparse_workers`` answers).

    ``method_`` says which ran (``"bcc"`` or ``"majority"``), ``worker_density_`` and
    ``reason_`` why, ``estimator_`` is the fitted :class:`BCC` or :class:`MajorityVote`.
    ``labels_``, ``probas_``, ``errors_`` and ``priors_`` are the chosen method's; after
    majority vote, ``errors_`` counts each worker's answers against the vote shares (one
    pseudo-answer per row spread over its cells: the command line's ``--workers``) and
    ``skills_`` is majority vote's.

    >>> from pyvw_lite.api.crowd import Auto
    >>> answers = {"task": ["a", "a", "a", "b", "b", "b"], "worker": ["u", "v", "w"] * 2,
    ...            "label": ["x", "x", "y", "y", "y", "y"]}
    >>> model = Auto().fit(answers)
    >>> model.method_, model.labels_.tolist()
    ('majority', ['x', 'y'])
    """

    def __init__(self, sparse_workers: float = AUTO_DEFAULTS["sparse_workers"],
                 a_v: float = EBCC_DEFAULTS["a_v"], b_v: float = EBCC_DEFAULTS["b_v"],
                 n_iter: int = EBCC_DEFAULTS["max_iters"], tol: float = EBCC_DEFAULTS["tol"],
                 empirical_prior: bool = EBCC_DEFAULTS["empirical_prior"]):
        self.sparse_workers = sparse_workers
        self.a_v = a_v
        self.b_v = b_v
        self.n_iter = n_iter
        self.tol = tol
        self.empirical_prior = empirical_prior

    def fit(self, data, true_labels=None):
        from ..crowd.report import posterior_view
        from ..crowd.select import choose_default
        prepared = self._prepare(data, true_labels)
        choice = choose_default(prepared, self.sparse_workers)
        self.method_, self.worker_density_, self.reason_ = \
            choice.method, choice.density, choice.reason()
        if choice.method == "majority":
            chosen = MajorityVote()
        else:
            chosen = BCC(a_v=self.a_v, b_v=self.b_v, n_iter=self.n_iter, tol=self.tol,
                         empirical_prior=self.empirical_prior)
        chosen._label_types = self._label_types
        chosen._fit_prepared(prepared)
        self.estimator_ = chosen
        for name, value in vars(chosen).items():
            if name.endswith("_") and not name.startswith("_"):
                setattr(self, name, value)
        if choice.method == "majority":
            q = np.asarray(chosen.probas_, dtype=np.float64)
            self._publish_workers(prepared, posterior_view(prepared, q).matrices,
                                  q.mean(axis=0))
        return self
