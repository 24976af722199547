"""The public API: every name in ``keyramp.__all__`` resolves, and importing keyramp stays light."""

from __future__ import annotations

import subprocess
import sys

import keyramp
from keyramp.backends import STORES

# Names whose module imports Locust: the run API and the Python-workload user classes (Locust users),
# which the stores declare (StoreSpec.user).
_RUN = ("run_profile", "run_profiles", "RunOptions", "RunOutcome", "RunsOutcome", "MasterOptions", *STORES.users())


def _python(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_import_and_the_light_names_do_not_load_locust() -> None:
    assert _python("import sys, keyramp\n"
                   f"assert all(getattr(keyramp, n) is not None for n in keyramp.__all__ if n not in {_RUN})\n"
                   "print('locust' in sys.modules)") == ["False"]


def test_the_run_names_load_locust_first_then_everything_resolves() -> None:
    # Locust monkey-patches the standard library: a program that runs load resolves the run
    # names (or imports locust) before anything imports ssl, as `keyramp run` does.
    assert _python("import sys, keyramp\n"
                   f"assert all(getattr(keyramp, n) is not None for n in {_RUN})\n"
                   "print('locust' in sys.modules)\n"
                   "assert all(getattr(keyramp, n) is not None for n in keyramp.__all__)") == ["True"]


def test_dir_lists_the_public_api_once() -> None:
    assert dir(keyramp) == sorted(keyramp.__all__)
    assert len(set(keyramp.__all__)) == len(keyramp.__all__)
    assert {"DatastoreUser", "FirestoreUser", "BigtableUser"} <= set(keyramp.__all__)  # public names kept
