"""The ``mem-pipeline`` command line.

``main(argv)`` parses (``_parser``), runs one command (``_facts``: one user's memory; ``_admin``:
the demo, upkeep, chat and the servers) and turns every expected error into one line on stderr
and an exit code, never a traceback:

====  =========================================================================
0     done (an empty result too)
1     no such fact for this user (``NotFoundError``)
2     an error the user can fix: usage, input, configuration, store, embedder, LLM
130   interrupted (Ctrl-C)
====  =========================================================================
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ..errors import MemPipelineError, NotFoundError
from ._common import err
from ._parser import build_parser

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_NOT_FOUND", "EXIT_OK", "build_parser", "main"]

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mem-pipeline`` with ``argv`` (default: the process's); return the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed
        return e.code if isinstance(e.code, int) else EXIT_ERROR if e.code else EXIT_OK
    try:
        code: int = args.func(args)
        sys.stdout.flush()
        return code
    except NotFoundError as e:
        err(f"mem-pipeline: not found: {e}")
        return EXIT_NOT_FOUND
    except MemPipelineError as e:
        err(f"mem-pipeline: error: {e}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err("mem-pipeline: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader left (mem-pipeline list | head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
