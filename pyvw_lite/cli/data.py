"""`pyvw-lite datasets` (list and fetch the real sets) and `pyvw-lite generate` (seeded synthetic
data from pyvw_lite.synthetic), as typer sub-apps of the subcommand app."""
from __future__ import annotations

import typer

from ..io.atomic import check_paths, published_together

datasets_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                           help="Real crowd and rating sets: the bundled ones and the registered "
                                "ones, fetched from their public source into the cache.")
generate_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                           help="Seeded synthetic data: ratings, crowd answers, rater-task VW "
                                "lines.")


def fail(exc: Exception) -> typer.Exit:
    typer.echo(f"pyvw-lite: error: {exc}", err=True)
    return typer.Exit(1)


def size_text(size: int) -> str:
    for unit in ("B", "kB", "MB"):
        if size < 1000 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


@datasets_app.command("list")
def datasets_list() -> None:
    """Every set `fetch` knows: name, kind, size, source, licence as the source states it, and
    whether it is bundled, cached or still to fetch (the cache: $PYVW_LITE_DATA_HOME, else
    $XDG_CACHE_HOME/pyvw-lite/datasets, else ~/.cache/pyvw-lite/datasets)."""
    from ..datasets import bundled, cache_home, folder, is_cached, registry
    entries = registry()
    rows = [("name", "kind", "size", "where", "source", "licence")]
    for name in bundled():
        where = folder(name)
        size = sum(path.stat().st_size for path in where.iterdir() if path.is_file())
        rows.append((name, "crowd", size_text(size), "bundled", "bundled with the package",
                     "see its README.md"))
    for name, entry in entries.items():
        if name in bundled():
            continue
        size = sum(file["bytes"] for file in entry["files"].values())
        state = "cached" if is_cached(entry) else "to fetch"
        rows.append((name, entry["kind"], size_text(size), state,
                     f"{entry['repository']}@{entry['commit'][:8]}", entry["licence"]))
    widths = [max(len(row[k]) for row in rows) for k in range(5)]
    for row in rows:
        typer.echo("  ".join(text.ljust(width) for text, width in zip(row, widths)) + "  "
                   + row[5])
    typer.echo(f"cache: {cache_home()}")


@datasets_app.command("fetch")
def datasets_fetch(
    names: list[str] = typer.Argument(..., help="set names (`pyvw-lite datasets list`)"),
) -> None:
    """Get each set into the cache (from $PYVW_LITE_DATASETS_MIRROR when set, else from its
    source, converted and checked against the registry's SHA-256) and print its folder, one
    line per set."""
    from ..datasets import DatasetError, fetch
    for name in names:
        try:
            typer.echo(str(fetch(name)))
        except (DatasetError, OSError) as exc:
            raise fail(exc) from None


def outputs_checked(pairs: list[tuple[str, str | None]]) -> None:
    """Refuse two outputs on one file, an output in a missing folder or on a directory."""
    try:
        check_paths([], pairs)
    except (ValueError, OSError) as exc:
        raise fail(exc) from None


def pair_of(text: str, flag: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"expected two numbers LOW,HIGH, got {text!r}",
                                 param_hint=f"'{flag}'") from None
    if not 0.0 <= low <= high <= 1.0:
        raise typer.BadParameter(f"expected 0 <= LOW <= HIGH <= 1, got {text!r}",
                                 param_hint=f"'{flag}'")
    return low, high


@generate_app.command("ratings")
def generate_ratings(
    train: str = typer.Option(..., "--train", help="VW file of the training ratings"),
    test: str = typer.Option(..., "--test", help="VW file of the test ratings"),
    n_ratings: int = typer.Option(1_000_000, "--ratings", min=1,
                                  help="ratings drawn (a repeated user-item pair is dropped, "
                                       "so a few fewer come back)"),
    n_users: int = typer.Option(6_040, "--users", min=1, help="users"),
    n_items: int = typer.Option(3_700, "--items", min=1, help="items"),
    rank: int = typer.Option(8, "--rank", min=1, help="rank of the user-item term"),
    latent_sd: float = typer.Option(0.6, "--latent_sd", min=0.0,
                                    help="standard deviation of the user-item term"),
    noise_sd: float = typer.Option(0.8, "--noise_sd", min=1e-6,
                                   help="standard deviation of the noise before rounding"),
    test_fraction: float = typer.Option(0.1, "--test_fraction", min=0.0, max=1.0,
                                        help="chance that a rating goes to --test"),
    seed: int = typer.Option(12345, "--seed", min=0, help="seed of the ratings and the split"),
) -> None:
    """MovieLens-shaped ratings 1..5, round(3.5 + b_u + b_i + p_u.q_i + noise), as VW lines
    `RATING |u u_USER |m m_ITEM` split into --train and --test; prints the test MSE of the
    generating model (the floor), of its biases alone and of the training mean.  The defaults
    are MovieLens-1M's shape; MovieLens-100k's is --users 943 --items 1682 --ratings 100000."""
    from ..synthetic import user_item_world, write_ratings
    outputs_checked([("--train", train), ("--test", test)])
    world = user_item_world(n_ratings, n_users, n_items, rank, latent_sd, noise_sd, seed)
    test_mask = world.split(test_fraction, seed)
    try:
        with published_together():
            for path, mask in ((train, ~test_mask), (test, test_mask)):
                write_ratings(path, world.users[mask], world.items[mask], world.ratings[mask])
    except OSError as exc:
        raise fail(exc) from None
    truth = world.ratings[test_mask]
    if truth.size:
        train_mean = world.ratings[~test_mask].mean() if (~test_mask).any() else 3.0
        for name, predicted in (("generating model", world.expected(world.mean[test_mask])),
                                ("its biases alone", world.expected(world.base[test_mask])),
                                ("training mean", train_mean)):
            typer.echo(f"{name + ':':18} test MSE {((predicted - truth) ** 2).mean():.4f}")
    typer.echo(f"ratings {world.ratings.size} (train {int((~test_mask).sum())}, "
               f"test {int(test_mask.sum())}), users {n_users}, items {n_items}")


@generate_app.command("crowd")
def generate_crowd(
    output: str = typer.Option(..., "-o", "--output", help="answers CSV (task,worker,label)"),
    truth: str = typer.Option(None, "--truth", help="also write the true labels (task,label)"),
    n_tasks: int = typer.Option(100_000, "--tasks", min=1, help="tasks"),
    per_task: int = typer.Option(5, "--answers_per_task", min=1,
                                 help="distinct workers answering each task"),
    n_workers: int = typer.Option(2_000, "--workers", min=1, help="workers"),
    classes: int = typer.Option(5, "--classes", min=2, help="labels 0..K-1"),
    spammers: float = typer.Option(0.1, "--spammer_fraction", min=0.0, max=1.0,
                                   help="share of workers answering whatever the truth"),
    accuracy: str = typer.Option("0.5,0.9", "--accuracy",
                                 help="honest workers' accuracy, uniform in LOW,HIGH"),
    hard: float = typer.Option(0.2, "--hard_fraction", min=0.0, max=1.0,
                               help="share of tasks where every answer is uniform half the time"),
    seed: int = typer.Option(12345, "--seed", min=0, help="seed"),
) -> None:
    """Crowd answers of a Dawid-Skene world with spammers and hard tasks (crowd-kit's layout),
    for `pyvw-lite crowd`."""
    from ..synthetic import crowd_answers
    bounds = pair_of(accuracy, "--accuracy")
    if per_task > n_workers:
        raise typer.BadParameter(f"{per_task} distinct workers per task need at least as many "
                                 f"workers (--workers {n_workers})", param_hint="'--workers'")
    outputs_checked([("-o", output), ("--truth", truth)])
    data = crowd_answers(n_tasks, per_task, n_workers, classes, seed, spammers, bounds, hard)
    try:
        data.write(output, truth)
    except OSError as exc:
        raise fail(exc) from None
    typer.echo(f"answers {data.tasks.size}, tasks {n_tasks}, workers {n_workers}, "
               f"labels {classes}: {output}" + (f", truth {truth}" if truth else ""))


@generate_app.command("rater-task")
def generate_rater_task(
    output: str = typer.Option(..., "-o", "--output", help="VW file of the ratings"),
    n_ratings: int = typer.Option(1_000_000, "--ratings", min=1, help="lines"),
    n_raters: int = typer.Option(2_000, "--raters", min=1, help="raters"),
    n_tasks: int = typer.Option(100_000, "--tasks", min=1, help="tasks"),
    classes: int = typer.Option(5, "--classes", min=2, help="classes: labels 1..K"),
    binary: bool = typer.Option(False, "--binary", help="labels -1/1 (needs --classes 2)"),
    accuracy: str = typer.Option("0.45,0.95", "--accuracy",
                                 help="raters' accuracy, uniform in LOW,HIGH"),
    seed: int = typer.Option(12345, "--seed", min=0, help="seed"),
) -> None:
    """Rater-task VW lines `LABEL |rater r_R |task t_T`: each rater answers through a confusion
    matrix of their own, rater activity is log-normal."""
    from ..synthetic import rater_task, write_vw
    bounds = pair_of(accuracy, "--accuracy")
    if binary and classes != 2:
        raise typer.BadParameter("--binary needs --classes 2", param_hint="'--binary'")
    outputs_checked([("-o", output)])
    data = rater_task(n_ratings, n_raters, n_tasks, classes, seed, bounds)
    try:
        write_vw(output, data, binary=binary)
    except OSError as exc:
        raise fail(exc) from None
    typer.echo(f"lines {n_ratings}, raters {n_raters}, tasks {n_tasks}, classes {classes}: "
               f"{output}")
