"""Bad Python workloads and templates: one line naming the file and the problem, exit 2,
before any load, nothing written (``keyramp lint`` and ``keyramp run`` in subprocesses:
importing a workload imports Locust, which monkey-patches the process; the refused runs
share one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _runs import keyramp, keyramp_each

GOOD = '''import keyramp


class Orders(keyramp.FirestoreUser):
    @keyramp.op(weight=3)
    def place(self):
        return self.keys.new()

    @keyramp.op
    def look(self):
        return self.keys.existing()
'''

MODULES = {
    "good.py": GOOD,
    "syntax.py": "import keyramp\n\nclass Orders(keyramp.FirestoreUser)\n    pass\n",
    "raises.py": "import keyramp\n\nraise RuntimeError('no config for this environment')\n",
    "plain.py": "class Orders:\n    pass\n",
    "static.py": ("import keyramp\n\nclass Orders(keyramp.FirestoreUser):\n    @keyramp.op\n    @staticmethod\n"
                  "    def place():\n        return None\n"),
    "needs.py": ("import keyramp\n\nclass Orders(keyramp.FirestoreUser):\n    @keyramp.op\n"
                 "    def place(self, room):\n        return None\n"),
    "empty.py": "import keyramp\n\nclass Orders(keyramp.FirestoreUser):\n    def place(self):\n        return None\n",
    "zero.py": ("import keyramp\n\nclass Orders(keyramp.FirestoreUser):\n    @keyramp.op(weight=0)\n"
                "    def place(self):\n        return None\n"),
    "text.py": ("import keyramp\n\nclass Orders(keyramp.FirestoreUser):\n    @keyramp.op(weight=\"3\")\n"
                "    def place(self):\n        return None\n"),
}

# profile name -> (workload / keys / top-level patch, what the one line must say after "<file>: ")
CASES = {
    "syntax": ({"user": "syntax.py:Orders"}, "syntax.py: import failed (line 3): SyntaxError: expected ':'"),
    "raises": (
        {"user": "raises.py:Orders"},
        "raises.py: import failed (line 3): RuntimeError: no config for this environment",
    ),
    "missing_class": ({"user": "good.py:Order"}, "good.py: no class 'Order' (keyramp users here: Orders)"),
    "not_a_user": ({"user": "plain.py:Orders"}, "plain.py:Orders is not a subclass of keyramp.DatastoreUser"),
    "static_op": (
        {"user": "static.py:Orders"},
        "static.py: import failed (line 4): TypeError: keyramp.op decorates a method",
    ),
    "op_with_params": (
        {"user": "needs.py:Orders"},
        "needs.py: Orders.place: an op takes only self (it also needs: room)",
    ),
    "no_ops": ({"user": "empty.py:Orders"}, "empty.py:Orders has no @keyramp.op methods"),
    "zero_weight": (
        {"user": "zero.py:Orders"},
        "zero.py: import failed (line 4): TypeError: keyramp.op: weight must be an integer ≥ 1, got 0",
    ),
    "text_weight": (
        {"user": "text.py:Orders"},
        "text.py: import failed (line 4): TypeError: keyramp.op: weight must be an integer ≥ 1, got '3'",
    ),
    "no_file": ({"user": "gone.py:Orders"}, "gone.py: no such file"),
    "bad_spec": ({"user": "good.py"}, 'workload.user: expected "file.py:ClassName"'),
    "ops_too": ({"user": "good.py:Orders", "ops": {"insert": 1.0}}, "workload.ops: does not apply with workload.user"),
    "template": (
        {"user": "good.py:Orders", "strategy": "shard(8#timestamp"},
        "keys.strategy: template 'shard(8#timestamp' at column 8: expected ',' or ')'",
    ),
    "wrong_store": (
        {"user": "good.py:Orders", "backend": "bigtable"},
        "backend: bigtable does not apply to Orders, a firestore user",
    ),
}


def _profile(tmp: Path, name: str, patch: dict[str, object]) -> Path:
    workload = {k: v for k, v in patch.items() if k not in ("strategy", "backend")}
    lines = [f'name = "{name}"', f'backend = "{patch.get("backend", "firestore")}"', "[workload]"]
    for key, value in workload.items():
        lines.append(f'{key} = {{ insert = 1.0 }}' if isinstance(value, dict) else f'{key} = "{value}"')
    lines += ["[keys]", f'strategy = "{patch.get("strategy", "random")}"']
    path = tmp / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("bad-workloads")
    for name, text in MODULES.items():
        (tmp / name).write_text(text)
    return {name: _profile(tmp, name, patch) for name, (patch, _) in CASES.items()}


def test_every_bad_case_is_one_line_naming_file_and_problem(profiles: dict[str, Path]) -> None:
    result = keyramp("lint", *map(str, profiles.values()))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == len(CASES), lines
    for (name, (_, needle)), line in zip(CASES.items(), lines, strict=True):
        path = profiles[name]
        assert line.startswith(f"keyramp: {path}: "), line
        assert needle in line, (name, line)
        if "user" in CASES[name][0] and name not in ("bad_spec", "ops_too", "template", "wrong_store"):
            assert str(path.parent / needle.split(":")[0].split(" ")[0]) in line  # the workload's own file


REFUSED = ("raises", "template", "zero_weight", "wrong_store", "no_file")


@pytest.fixture(scope="module")
def refusals(profiles: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """``keyramp run`` of each refused profile, all in one fresh interpreter (the CLI's entry
    point each time): a process per case only re-paid the start-up."""
    tmp = tmp_path_factory.mktemp("refused")
    outs = {name: tmp / name / "out" for name in REFUSED}
    results = keyramp_each((["run", str(profiles[name]), "--out", str(outs[name])] for name in REFUSED),
                           env={"PATH": "/nonexistent"} | _python_env())
    return {name: {**r, "out": outs[name]} for name, r in zip(REFUSED, results, strict=True)}


@pytest.mark.parametrize("name", REFUSED)
def test_run_refuses_before_anything_starts(refusals: dict[str, dict[str, Any]], name: str) -> None:
    result = refusals[name]
    assert result["code"] == 2, result["stderr"]
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1 and CASES[name][1] in lines[0], lines
    assert not result["out"].exists()  # nothing written


def _python_env() -> dict[str, str]:
    # No emulator variables and no gcloud on PATH: had the run got past validation, it could
    # not have started anything either; the refusal must come first.
    import os

    return {k: v for k, v in os.environ.items() if k not in ("PATH",) and not k.endswith("_EMULATOR_HOST")}
