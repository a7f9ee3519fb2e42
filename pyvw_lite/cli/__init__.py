"""Command line: VW's flat argv (``pyvw-lite -d train.vw -f model``) plus typer subcommands."""
