"""Store proxies as processes: one per emulator, in its own process (its own GIL: the load
generator never waits on it), started on a free loopback port, configured and read over its
control RPC, stopped by pid.

A run's own proxies live as long as its target (``EmulatorTarget``); the ones ``keyramp
emulators up --fidelity store`` starts for an application's own tests are shared, recorded in
``proxies.json`` beside ``emulators.json`` so that ``status`` lists them and ``down`` stops
them (docs/fidelity.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import psutil

from keyramp.core import EmulatorError
from keyramp.targets._emulators import _pid_alive, _stop_group, log_tail
from keyramp.targets._proxy_stats import ProxyConfig

__all__ = [
    "ProxyProcess",
    "ProxyRecord",
    "control",
    "forget_shared",
    "load_shared",
    "save_shared",
    "shared_proxies",
    "upstream_of",
]

_STATE_FILE: Final = "proxies.json"
_CONTROL_TIMEOUT_S: Final = 10.0


def control(endpoint: str, call: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """A store proxy's control call (``stats``, or ``configure`` with a ``ProxyConfig``'s JSON)."""
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(f"http://{endpoint}/keyramp/{call}", data=data, method="GET" if data is None
                                     else "POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=_CONTROL_TIMEOUT_S) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        raise EmulatorError(f"store proxy at {endpoint}: {call}: {json.loads(exc.read()).get('error')}") from None
    return answer


class ProxyProcess:
    """``ProxyProcess(store=spec.name, upstream="127.0.0.1:8082", config=…, log_dir=…).start()``."""

    def __init__(self, *, store: str, upstream: str, config: ProxyConfig, log_dir: Path,
                 host: str = "127.0.0.1", start_timeout_s: float = 30.0, shared: bool = False) -> None:
        self.store = store
        self.upstream = upstream
        self.config = config
        self.host = host
        self.log_path = Path(log_dir) / f"proxy-{store}-{upstream.rpartition(':')[2]}.log"
        self.start_timeout_s = start_timeout_s
        #: Outlives this process (``emulators up``); otherwise it stops when this process is gone.
        self.shared = shared
        self.port = 0
        self.pid = 0
        self.create_time = 0.0
        self._proc: subprocess.Popen[str] | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def describe(self) -> str:
        return f"store proxy for {self.store} (pid {self.pid}, {self.endpoint} in front of {self.upstream})"

    def start(self) -> ProxyProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "keyramp.targets.proxy", "--store", self.store, "--upstream", self.upstream,
                   "--listen", f"{self.host}:0", "--config", json.dumps(self.config.to_json()),
                   *(() if self.shared else ("--exit-with", str(os.getpid())))]
        with open(self.log_path, "wb") as log:
            # Its own session: `keyramp emulators up` exits, the shared proxy goes on.
            self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                          text=True, start_new_session=True)
        self.pid = self._proc.pid
        with contextlib.suppress(psutil.Error):
            self.create_time = psutil.Process(self.pid).create_time()
        line = _first_line(self._proc, self.start_timeout_s)
        if not line.startswith("listening "):
            self.stop()
            raise EmulatorError(f"store proxy for {self.store} did not start: {log_tail(self.log_path)}")
        self.port = int(line.rsplit(":", 1)[1])
        return self

    def alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return _pid_alive(self.pid, self.create_time)

    def died(self) -> str | None:
        """A one-line reason if the proxy exited."""
        if self.pid == 0 or self.alive():
            return None
        return f"{self.describe()} exited (log tail: {log_tail(self.log_path)})"

    def configure(self, config: ProxyConfig) -> dict[str, Any]:
        """A fresh model for ``config`` (zeroed counts, clock at zero); returns the counts before."""
        reply = control(self.endpoint, "configure", config.to_json())
        self.config = config
        previous: dict[str, Any] = reply["previous"]
        return previous

    def stats(self) -> dict[str, Any]:
        return control(self.endpoint, "stats")

    def stop(self, grace_s: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if self.pid:
            _stop_group(self.pid, self.create_time, grace_s)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace_s)
            if proc.stdout is not None:
                proc.stdout.close()

    def record(self, kind: str) -> ProxyRecord:
        return ProxyRecord(kind=kind, store=self.store, endpoint=self.endpoint, upstream=self.upstream, pid=self.pid,
                           create_time=self.create_time, log_path=str(self.log_path), config=self.config.to_json())


def _first_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """First stdout line of ``proc``, or '' after ``timeout_s`` (a thread: pipes have no timeout)."""
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return out[0].strip() if out else ""


@dataclass(frozen=True, kw_only=True)
class ProxyRecord:
    """A shared proxy as ``proxies.json`` records it."""

    kind: str
    store: str
    endpoint: str
    upstream: str
    pid: int
    create_time: float
    log_path: str
    config: Mapping[str, Any]

    def alive(self) -> bool:
        return _pid_alive(self.pid, self.create_time)

    def stop(self) -> None:
        _stop_group(self.pid, self.create_time, 5.0)


def load_shared(state_dir: Path) -> dict[str, ProxyRecord]:
    try:
        raw = json.loads((Path(state_dir) / _STATE_FILE).read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise EmulatorError(f"unreadable proxy state file {Path(state_dir) / _STATE_FILE}: {exc}") from None
    return {kind: ProxyRecord(**entry) for kind, entry in raw.get("proxies", {}).items()}


def save_shared(state_dir: Path, records: Mapping[str, ProxyRecord]) -> None:
    path = Path(state_dir) / _STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"proxies": {k: {**asdict(v), "config": dict(v.config)} for k, v in records.items()}},
                              indent=2))
    tmp.replace(path)


def forget_shared(state_dir: Path, kinds: Iterable[str] | None = None) -> list[str]:
    """Stop the recorded shared proxies of ``kinds`` (default: all); returns the kinds stopped."""
    records = load_shared(state_dir)
    stopped = [k for k in records if kinds is None or k in set(kinds)]
    for kind in stopped:
        records.pop(kind).stop()
    save_shared(state_dir, records)
    return stopped


def shared_proxies(state_dir: Path, endpoints: Mapping[str, str], config: ProxyConfig) -> dict[str, ProxyRecord]:
    """A shared proxy in front of each emulator (``keyramp emulators up --fidelity store``): a live
    recorded one with the same emulator and configuration is reused, any other replaced."""
    from keyramp.backends import EMULATOR_FOR  # deferred: start-up cost (the store registry)

    store_of = {kind: store for store, kind in EMULATOR_FOR.items()}
    records = load_shared(state_dir)
    out: dict[str, ProxyRecord] = {}
    for kind, upstream in endpoints.items():
        found = records.get(kind)
        if found is not None and found.alive() and found.upstream == upstream and found.config == config.to_json():
            out[kind] = found
            continue
        if found is not None:
            found.stop()
        proxy = ProxyProcess(store=store_of[kind], upstream=upstream, config=config,
                             log_dir=Path(state_dir) / "logs", shared=True).start()
        out[kind] = records[kind] = proxy.record(kind)
    save_shared(state_dir, records)
    return out


def upstream_of(state_dir: Path, endpoint: str) -> str | None:
    """The emulator behind ``endpoint`` if it is a live shared proxy (``*_EMULATOR_HOST`` exported
    from ``emulators up --fidelity store``), else None."""
    for record in load_shared(state_dir).values():
        if record.endpoint == endpoint and record.alive():
            return record.upstream
    return None
