"""The flags of keyramp's own subprocess entry points (``python -m keyramp.run.worker``,
``python -m keyramp.targets.netem``), which other processes start with a fixed command line.

argparse belongs to the CLI (``keyramp/cli/``, an import contract in pyproject.toml); these
modules live in lower layers, so they read ``--name value`` pairs and bare switches here. A bad
command line is a ``UsageError`` naming the program and the flag (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from keyramp.core._errors import UsageError

__all__ = ["endpoint", "parse_flags"]


def endpoint(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as a (host, port) pair."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def parse_flags(argv: Sequence[str], *, prog: str, values: Mapping[str, Callable[[str], Any]],
                switches: frozenset[str] = frozenset(), required: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``--name value`` (converted by ``values[name]``) and bare ``--switch`` flags, by name with
    dashes as underscores; a switch not given is False, a value not given absent."""
    found: dict[str, Any] = {name.replace("-", "_"): False for name in switches}
    args = list(argv)
    while args:
        flag = args.pop(0)
        name = flag.removeprefix("--")
        if not flag.startswith("--") or (name not in values and name not in switches):
            known = ", ".join(f"--{n}" for n in [*values, *sorted(switches)])
            raise UsageError(f"{prog}: unknown argument {flag!r} (flags: {known})")
        if name in switches:
            found[name.replace("-", "_")] = True
            continue
        if not args:
            raise UsageError(f"{prog}: {flag} needs a value")
        text = args.pop(0)
        try:
            found[name.replace("-", "_")] = values[name](text)
        except ValueError as exc:
            raise UsageError(f"{prog}: {flag}: {exc}") from None
    missing = [f"--{n}" for n in sorted(required) if n.replace("-", "_") not in found]
    if missing:
        raise UsageError(f"{prog}: {missing[0]} is required")
    return found
