"""typer app for the subcommands that VW itself does not have."""
from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="pyvw-lite subcommands (a plain VW command line needs none).")


@app.callback()
def _root() -> None:
    """pyvw-lite subcommands."""


@app.command()
def bench(
    lines: int = typer.Option(1_000_000, "--lines", "-n", help="rater-task lines to generate"),
    repeat: int = typer.Option(3, "--repeat", help="runs per tool and scenario (median kept)"),
    seed: int = typer.Option(12345, "--seed", help="seed of the generated data"),
    loss: str = typer.Option("logistic", "--loss_function", help="loss of the binary learner"),
    workdir: str = typer.Option(None, "--workdir", help="keep data and caches here"),
    peer: bool = typer.Option(True, "--peer/--no-peer", help="also time VW (pip vowpalwabbit)"),
    json_out: str = typer.Option(None, "--json", help="also write the results as JSON"),
    scenario: list[str] = typer.Option(None, "--scenario",
                                       help="text, cache, sft or sft-dyad (repeatable; default all)"),
) -> None:
    """Time pyvw-lite and VW side by side on seeded rater-task data; print the ratio."""
    from .bench import SCENARIOS, results_json, run_bench
    chosen = tuple(scenario) if scenario else SCENARIOS
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        raise typer.BadParameter(f"unknown scenario {unknown[0]!r}; choose from "
                                 + ", ".join(SCENARIOS))
    results = run_bench(lines=lines, repeat=repeat, seed=seed, loss=loss, workdir=workdir,
                        peer=peer, chosen=chosen)
    if json_out:
        with open(json_out, "w") as handle:
            handle.write(results_json(results))
