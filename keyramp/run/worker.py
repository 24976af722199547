"""``python -m keyramp.run.worker --master-host HOST --master-port PORT [--exit-with-parent]``: one
Locust worker process, serving cells for the master until it says quit (``run_worker``).

``keyramp run --workers N`` launches this module (``_worker.worker_command``); ``keyramp run
--worker`` (the CLI verb, for workers on other hosts) is a thin wrapper over the same
``run_worker``. The entry point lives in the run layer, so a master never climbs to the CLI to
start its workers.
"""

from __future__ import annotations

import locust  # noqa: F401  (monkey-patches the standard library before anything imports ssl)

# isort: split
import sys
from collections.abc import Sequence

from keyramp.core import exit_code, parse_flags
from keyramp.run._worker import run_worker

__all__ = ["main"]

_PROG = "python -m keyramp.run.worker"


def main(argv: Sequence[str] | None = None) -> int:
    def run() -> int:
        flags = parse_flags(sys.argv[1:] if argv is None else argv, prog=_PROG,
                            values={"master-host": str, "master-port": int}, switches=frozenset({"exit-with-parent"}),
                            required=frozenset({"master-host", "master-port"}))
        return run_worker(**flags)

    return exit_code(run)


if __name__ == "__main__":
    raise SystemExit(main())
