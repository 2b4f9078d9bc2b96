"""How the ``rrf-retriever`` command's help reads: flags without a ``<bool>`` type, arguments in capitals.

Example:
    >>> from rrf_retriever.apps.cli import app
    >>> isinstance(app, CliTyper)
    True
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ["CliCommand", "CliGroup", "CliTyper"]


class CliCommand(TyperCommand):
    """A command whose help reads like a CLI's: a flag shows no ``<bool>`` type, an argument is ``QUERY`` in the
    usage line (typer's default spells flags ``--json <bool>`` and required arguments ``{query}``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            self._tidy(param)

    @staticmethod
    def _tidy(param: Any) -> None:
        if isinstance(param, TyperOption) and param.is_flag:
            param.metavar = ""  # shown instead of the type; a flag takes no value
        elif isinstance(param, TyperArgument) and param.metavar is None:
            param.metavar = (param.name or "arg").upper()

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            self._tidy(option)
        return option

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or (param.name or "arg").upper()
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class CliGroup(TyperGroup):
    """The app itself: its ``--help`` and ``--version`` flags show no ``<bool>`` either."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            CliCommand._tidy(param)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            CliCommand._tidy(option)
        return option


#: ``-h`` is ``--help``, on the app and on every command.
HELP_OPTION_NAMES = {"help_option_names": ["-h", "--help"]}


def _print_version(value: bool) -> None:
    if value:
        from rrf_retriever import __version__

        typer.echo(f"rrf-retriever {__version__}")
        raise typer.Exit


class CliTyper(typer.Typer):
    """Every command of this app is a :class:`CliCommand` unless it names its own class; ``-h`` is ``--help``
    everywhere; the app takes ``--version``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", HELP_OPTION_NAMES)
        super().__init__(*args, **kwargs)

        @self.callback()
        def _app(
            version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                         help="Print the version and exit."),
        ) -> None:
            """Hybrid retrieval (Qdrant dense + BM25 keyword) fused with weighted Reciprocal Rank Fusion."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", CliCommand)
        kwargs.setdefault("context_settings", HELP_OPTION_NAMES)
        return super().command(*args, **kwargs)
