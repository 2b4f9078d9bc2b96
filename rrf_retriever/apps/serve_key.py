"""Where ``rrf-retriever serve`` takes its API key from: the environment variable ``RRF_RETRIEVER_API_KEY``, a file
(``--api-key-file``), or ``--api-key`` (which works, with a warning: a command line is readable by every local user
in ``/proc/<pid>/cmdline`` and ``ps``).

Example:
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "key"
    ...     _ = path.write_text("s3cret\\n")  # as `echo s3cret > key` writes it
    ...     key_from_file(path)
    's3cret'
"""

from __future__ import annotations

import stat
from pathlib import Path

from rich.markup import escape

from rrf_retriever.apps.console import UsageError, err_console

__all__ = ["COMMAND_LINE_KEY_WARNING", "key_from_file", "serve_api_key"]

#: Printed to stderr when the key was given as ``--api-key``.
COMMAND_LINE_KEY_WARNING = (
    "[yellow]warning:[/yellow] --api-key puts the key on the command line, where other local users can read it "
    "(ps, /proc/<pid>/cmdline); set the environment variable RRF_RETRIEVER_API_KEY or use --api-key-file PATH instead"
)


def key_from_file(path: Path) -> str:
    """The API key in ``path``: its text without the line ending a text editor or ``echo`` adds.

    Raises:
        UsageError: the file cannot be read or holds no key (the message never shows the file's text).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"--api-key-file {path}: cannot read the key ({type(exc).__name__}: {getattr(exc, 'strerror', '')})"
        raise UsageError(msg) from None
    key = text.rstrip("\r\n")
    if not key.strip():
        msg = f"--api-key-file {path} is empty: write the key in it (one line)"
        raise UsageError(msg)
    return key


def serve_api_key(option_key: str | None, key_file: Path | None, *, on_command_line: bool) -> str | None:
    """The key ``serve`` requires: from ``--api-key-file``, else ``--api-key`` / ``RRF_RETRIEVER_API_KEY``.

    Warns (stderr) when the key was typed on the command line, and when the key file is readable by other users.

    Args:
        option_key: The value of ``--api-key`` (typer fills it from the environment variable too).
        key_file: The value of ``--api-key-file``.
        on_command_line: Whether ``option_key`` came from the command line (not from the environment).

    Raises:
        UsageError: both a key and a key file, or a key file without a key.
    """
    if key_file is not None:
        if option_key is not None:
            where = "--api-key" if on_command_line else "RRF_RETRIEVER_API_KEY"
            msg = f"give the API key once: {where} or --api-key-file, not both"
            raise UsageError(msg)
        key = key_from_file(key_file)
        try:
            mode = key_file.stat().st_mode
        except OSError:  # pragma: no cover - it was just read
            mode = 0
        if mode & (stat.S_IRGRP | stat.S_IROTH):
            shown = escape(str(key_file))
            err_console.print(f"[yellow]warning:[/yellow] {shown} is readable by other users (chmod 600 it)",
                              highlight=False, soft_wrap=True)
        return key
    if option_key is not None and on_command_line:
        err_console.print(COMMAND_LINE_KEY_WARNING, highlight=False, soft_wrap=True)
    return option_key
