"""``$KEYRAMP_PROFILE`` under plain ``locust -f`` names one cell, or Locust stops in one line
(exit 2, file and field named, before any load) instead of silently running the first cell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from keyramp.core._errors import UsageError
from keyramp.profile._files import load_profile, write_profile
from keyramp.run._plain import plain_cell

ROOT = Path(__file__).resolve().parents[2]


def _profile(path: Path, backend: str | list[str], strategy: str | list[str]) -> Path:
    return write_profile(path, {"name": "shop", "backend": backend}, workload={"record_count": 10},
                         keys={"strategy": strategy})


def test_plain_cell_is_the_one_cell_or_says_how_to_pick_one(tmp_path: Path) -> None:
    one = load_profile(_profile(tmp_path / "one.toml", ["datastore", "bigtable"], "random"))
    assert plain_cell(one, "bigtable").strategy == "random"  # the locustfile picks the store
    many = load_profile(_profile(tmp_path / "many.toml", "datastore", ["random", "sequential"]))
    with pytest.raises(UsageError, match=r"many\.toml: \[keys\] strategy lists 2 strategies \(random, sequential\)"
                                         r".*keep one .*keyramp run"):
        plain_cell(many, "datastore")
    with pytest.raises(UsageError, match=r"one\.toml: backend \['bigtable', 'datastore'\] has no firestore"):
        plain_cell(one, "firestore")


_SHOP = """import keyramp

class Shop(keyramp.DatastoreUser):
    @keyramp.op
    def look(self) -> None:
        pass
"""


@pytest.mark.parametrize("case", ["locustfile", "python-workload"])
def test_plain_locust_refuses_a_multi_cell_profile_in_one_line(tmp_path: Path, case: str) -> None:
    if case == "locustfile":  # locustfiles/datastore.py with the README's quickstart (3 strategies)
        profile, locustfile, field = ROOT / "profiles" / "quickstart.toml", ROOT / "locustfiles" / "datastore.py", \
            "[keys] strategy lists 3 strategies"
    else:  # a user's workload class, whose profile lists two stores it serves
        (tmp_path / "shop.py").write_text(_SHOP)
        profile = _profile(tmp_path / "shop.toml", ["datastore", "firestore-datastore"], "random")
        locustfile, field = tmp_path / "shop.py", "backend lists 2 stores for Shop"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_EMULATOR_HOST")}
    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", "1", "-r", "1", "-t", "1s"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**env, "KEYRAMP_PROFILE": str(profile)})
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("keyramp:")]
    assert len(ours) == 1 and str(profile) in ours[0] and field in ours[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
