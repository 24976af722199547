"""The official local emulators: start, health-check, reset, stop; ``keyramp emulators`` verbs.

Each emulator is launched *directly* (the JVM or the Go binary, not ``gcloud beta emulators
... start``, which forks Java and leaves it orphaned when the wrapper dies) in its own
process group, so ``down`` can signal the whole group. Live emulators are recorded in
``emulators.json`` in a state directory so ``up``/``status``/``down`` work across processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import psutil

from keyramp.backends import EmulatorSpec, emulator_specs
from keyramp.core import EmulatorError, UsageError

__all__ = [
    "EMULATORS",
    "EmulatorManager",
    "EmulatorSpec",
    "RunningEmulator",
    "default_state_dir",
    "endpoints_from_env",
    "free_port",
    "log_tail",
    "reset",
    "sdk_root",
]

_DEFAULT_SDK_ROOT: Final = Path("/usr/lib/google-cloud-sdk")
_STATE_FILE: Final = "emulators.json"
_LOG_TAIL_CHARS: Final = 300
_STOP_GRACE_S: Final = 10.0


def _compose_hint() -> str:
    env = " / ".join(spec.env_var for spec in emulator_specs().values())
    return ("install the Google Cloud SDK emulator components, or run `docker compose up emulators` "
            f"(docker-compose.yml) and set {env}")


class _Emulators(Mapping[str, EmulatorSpec]):
    """Emulator kind -> ``EmulatorSpec``: a live view of the store registry (each store's
    ``_spec.py`` declares its emulator)."""

    def __getitem__(self, kind: str) -> EmulatorSpec:
        return emulator_specs()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(emulator_specs())

    def __len__(self) -> int:
        return len(emulator_specs())


EMULATORS: Mapping[str, EmulatorSpec] = _Emulators()


@dataclass(frozen=True, kw_only=True)
class RunningEmulator:
    kind: str
    host: str
    port: int
    pid: int
    log_path: str
    started_at: str  # ISO 8601 UTC
    #: psutil create_time of ``pid``: guards against signalling a recycled pid.
    create_time: float = 0.0
    consistency: float | None = None
    #: The ``keyramp run`` process that started this emulator for itself (pid, create_time);
    #: ``None``: shared, started by ``keyramp emulators up``.
    owner: tuple[int, float] | None = None
    #: Runs using a shared emulator now: ``(lease id, pid, create_time)``. A run never shares
    #: an emulator with another live run: cells reset the store, which would wipe the other's data.
    leases: tuple[tuple[str, int, float], ...] = ()

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def alive(self) -> bool:
        return _pid_alive(self.pid, self.create_time)

    def orphaned(self) -> bool:
        """Started by a run for itself, and that run is gone."""
        return self.owner is not None and not _pid_alive(*self.owner)

    def leased_by_others(self, lease_id: str) -> bool:
        return any(lid != lease_id and _pid_alive(pid, t) for lid, pid, t in self.leases)

    def lease_pids(self) -> list[int]:
        """Pids of the live runs leasing this (shared) emulator now."""
        return [pid for _, pid, t in self.leases if _pid_alive(pid, t)]


def _pid_alive(pid: int, create_time: float = 0.0) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and (
            not create_time or abs(proc.create_time() - create_time) < 1.0)
    except psutil.Error:
        return False


def _this_process() -> tuple[int, float]:
    return os.getpid(), psutil.Process().create_time()


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("KEYRAMP_STATE_DIR"):
        return Path(env["KEYRAMP_STATE_DIR"])
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]) / "keyramp"
    return Path.home() / ".local" / "state" / "keyramp"


def sdk_root(environ: Mapping[str, str] | None = None) -> Path:
    """The Cloud SDK root: ``$KEYRAMP_CLOUD_SDK_ROOT``, else ``gcloud info``, else the Debian path."""
    env = os.environ if environ is None else environ
    if env.get("KEYRAMP_CLOUD_SDK_ROOT"):
        return Path(env["KEYRAMP_CLOUD_SDK_ROOT"])
    gcloud = shutil.which("gcloud")
    return (_gcloud_sdk_root(gcloud) if gcloud else None) or _DEFAULT_SDK_ROOT


@functools.cache
def _gcloud_sdk_root(gcloud: str) -> Path | None:
    # Cached: `gcloud info` takes about a second, and a run asks for emulators and for the manifest.
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run([gcloud, "info", "--format=value(installation.sdk_root)"],
                             capture_output=True, text=True, timeout=30, check=False)
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip())
    return None


def endpoints_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Emulator endpoints named by environment variables, as ``{kind: "host:port"}``."""
    env = os.environ if environ is None else environ
    return {kind: env[spec.env_var] for kind, spec in emulator_specs().items() if env.get(spec.env_var)}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (emulators, the Locust master)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path | str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4 * _LOG_TAIL_CHARS))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    # One line: the CLI prints it as the reason.
    tail = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return tail[-_LOG_TAIL_CHARS:] or "(empty log)"


def _stop_group(pid: int, create_time: float, grace_s: float) -> None:
    """SIGTERM the process group led by ``pid`` (and every descendant), SIGKILL what is left."""
    try:
        leader = psutil.Process(pid)
        if create_time and abs(leader.create_time() - create_time) >= 1.0:
            return  # pid recycled: not ours
        procs = [leader, *leader.children(recursive=True)]
    except psutil.Error:
        procs = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    for proc in procs:  # children that left the group still get the signal
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    if alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(alive, timeout=5)


def _check_kinds(kinds: Iterable[str]) -> list[str]:
    known = emulator_specs()
    out = []
    for kind in kinds:
        if kind not in known:
            raise UsageError(f"unknown emulator {kind!r}; choose from {', '.join(known)}")
        if kind not in out:
            out.append(kind)
    return out


class EmulatorManager:
    """Starts, tracks and stops emulators recorded in ``<state_dir>/emulators.json``."""

    def __init__(self, *, state_dir: Path | None = None, sdk_root: Path | None = None,
                 host: str = "127.0.0.1", startup_timeout_s: float = 60.0,
                 stop_grace_s: float = _STOP_GRACE_S) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else default_state_dir()
        self._sdk_root = sdk_root
        self.host = host
        self.startup_timeout_s = startup_timeout_s
        self.stop_grace_s = stop_grace_s
        #: Kinds the last ``up`` launched (absent or replaced because dead or unhealthy), not reused.
        self.last_started: list[str] = []
        #: This manager's lease on shared emulators and the key suffix of its own (``up(for_run=True)``).
        self.lease_id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    # -- state file ----------------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.state_dir / _STATE_FILE

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise up/down between processes (two `keyramp run`s starting emulators)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _load(self) -> dict[str, RunningEmulator]:
        try:
            raw = json.loads(self.state_path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise EmulatorError(f"unreadable emulator state file {self.state_path}: {exc}") from None
        out = {}
        for key, entry in raw.get("emulators", {}).items():
            if entry.get("owner") is not None:
                entry["owner"] = tuple(entry["owner"])
            entry["leases"] = tuple(tuple(lease) for lease in entry.get("leases") or ())
            out[key] = RunningEmulator(**entry)
        return out

    def _save(self, running: Mapping[str, RunningEmulator]) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"emulators": {k: asdict(v) for k, v in running.items()}}, indent=2))
        tmp.replace(self.state_path)

    # -- verbs ----------------------------------------------------------------------------
    def status(self) -> list[RunningEmulator]:
        return list(self._load().values())

    def up(self, kinds: Iterable[str] | None = None, *, consistency: float | None = None,
           for_run: bool = False) -> dict[str, RunningEmulator]:
        """Ensure the emulators run (default: every one); reuse live shared ones from the state
        file, start the rest concurrently. ``consistency`` goes to emulators that take it.

        ``for_run``: a ``keyramp run`` asks. It leases a shared emulator only when no other live
        run holds it (and its consistency fits); otherwise it starts its own, recorded as owned
        by this process so that :meth:`release` stops it — or a later ``up`` if the run died.
        """
        wanted = _check_kinds(EMULATORS if kinds is None else kinds)
        self.last_started = []
        if consistency is not None and not 0.0 <= consistency <= 1.0:
            raise UsageError(f"--consistency must be within [0, 1], got {consistency}")
        with self._locked():
            running = self._load()
            for key in [k for k, e in running.items() if e.orphaned()]:  # a run that died left it
                _stop_group(running[key].pid, running[key].create_time, self.stop_grace_s)
                running.pop(key)
            result: dict[str, RunningEmulator] = {}
            to_start: list[str] = []
            for kind in wanted:
                emu = running.get(kind)
                if emu is not None and emu.alive() and EMULATORS[kind].health(emu.endpoint, 1.0):
                    mismatch = ("consistency" in EMULATORS[kind].options and consistency is not None
                                and (emu.consistency or 1.0) != consistency)
                    if for_run and (mismatch or emu.leased_by_others(self.lease_id)):
                        to_start.append(kind)  # this run's own emulator: never share resets
                        continue
                    if mismatch:
                        raise EmulatorError(
                            f"{kind} emulator already runs with consistency {emu.consistency}; "
                            f"run `keyramp emulators down {kind}` first")
                    if for_run:
                        emu = running[kind] = replace(emu, leases=(*emu.leases, (self.lease_id, *_this_process())))
                    result[kind] = emu
                else:
                    if emu is not None:  # dead or hung: clean up before replacing it
                        _stop_group(emu.pid, emu.create_time, self.stop_grace_s)
                        running.pop(kind)
                    to_start.append(kind)
            if to_start:
                started = self._start(to_start, consistency=consistency)
                for kind, emu in started.items():
                    if for_run:
                        emu = replace(emu, owner=_this_process())
                        running[f"{kind}@{self.lease_id}"] = emu
                    else:
                        running[kind] = emu
                    result[kind] = emu
                self.last_started = list(to_start)
            self._save(running)
        return {kind: result[kind] for kind in wanted}

    def release(self) -> list[str]:
        """After a run: drop its leases on shared emulators and stop the ones it started for
        itself; returns the kinds stopped."""
        stopped: list[str] = []
        with self._locked():
            running = self._load()
            for key, emu in list(running.items()):
                if key.endswith(f"@{self.lease_id}"):
                    _stop_group(emu.pid, emu.create_time, self.stop_grace_s)
                    running.pop(key)
                    stopped.append(emu.kind)
                elif any(lid == self.lease_id for lid, _, _ in emu.leases):
                    running[key] = replace(emu, leases=tuple(x for x in emu.leases if x[0] != self.lease_id))
            self._save(running)
        return stopped

    def down(self, kinds: Iterable[str] | None = None) -> list[str]:
        """Stop the named (default: all recorded) shared emulators, and any a dead run left
        behind; a live run's own emulators are its to stop. Returns the kinds stopped."""
        with self._locked():
            running = self._load()
            wanted = set(_check_kinds(kinds)) if kinds else None
            targets = [k for k, e in running.items()
                       if (wanted is None or e.kind in wanted) and (e.owner is None or e.orphaned())]
            for key in targets:
                emu = running.pop(key)
                _stop_group(emu.pid, emu.create_time, self.stop_grace_s)
            self._save(running)
        return sorted({key.split("@")[0] for key in targets})

    # -- start-up --------------------------------------------------------------------------
    def _start(self, kinds: Sequence[str], *, consistency: float | None) -> dict[str, RunningEmulator]:
        sdk = self._sdk_root if self._sdk_root is not None else sdk_root()
        for kind in kinds:
            if not (sdk / EMULATORS[kind].artifact).exists():
                raise EmulatorError(f"{kind} emulator not found under {sdk}: {_compose_hint()}")
        java = [k for k in kinds if EMULATORS[k].needs_java]
        if java and not shutil.which("java"):
            raise EmulatorError(f"java not found (the {'/'.join(java)} emulators need Java 11+): {_compose_hint()}")
        log_dir = self.state_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        pending: dict[str, tuple[subprocess.Popen[bytes], RunningEmulator]] = {}
        try:
            # Launch all first, then poll: JVM start-up (seconds) dominates, so they overlap.
            for kind in kinds:
                spec = EMULATORS[kind]
                port = free_port(self.host)
                log_path = log_dir / f"{kind}-{port}.log"
                takes_consistency = "consistency" in spec.options
                opts = {"consistency": consistency} if takes_consistency else {}
                work_dir = self.state_dir / "work" / f"{kind}-{port}"
                work_dir.mkdir(parents=True, exist_ok=True)
                with open(log_path, "wb") as log:
                    # cwd: the legacy Datastore emulator writes WEB-INF/appengine-generated/
                    # into its working directory; keep that out of the user's checkout.
                    proc = subprocess.Popen(spec.command(sdk, self.host, port, opts), stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            cwd=work_dir)
                pending[kind] = (proc, RunningEmulator(
                    kind=kind, host=self.host, port=port, pid=proc.pid, log_path=str(log_path),
                    started_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
                    create_time=psutil.Process(proc.pid).create_time(),
                    consistency=(1.0 if consistency is None else consistency) if takes_consistency else None))
            ready: dict[str, RunningEmulator] = {}
            deadline = time.monotonic() + self.startup_timeout_s
            while len(ready) < len(pending):
                for kind, (proc, emu) in pending.items():
                    if kind in ready:
                        continue
                    if proc.poll() is not None:
                        raise EmulatorError(f"{kind} emulator exited with code {proc.returncode}: "
                                            f"{log_tail(emu.log_path)}")
                    if EMULATORS[kind].health(emu.endpoint, 0.5):
                        ready[kind] = emu
                if len(ready) < len(pending):
                    if time.monotonic() > deadline:
                        late = next(k for k in pending if k not in ready)
                        raise EmulatorError(
                            f"{late} emulator not ready after {self.startup_timeout_s:g}s: "
                            f"{log_tail(pending[late][1].log_path)}")
                    time.sleep(0.1)
            return ready
        except BaseException:
            for proc, emu in pending.values():  # never leave a half-started JVM behind
                _stop_group(proc.pid, emu.create_time, self.stop_grace_s)
                with contextlib.suppress(OSError):
                    proc.wait(timeout=1)
            raise


# -- reset ---------------------------------------------------------------------------------
def reset(kind: str, endpoint: str, *, project: str, table: str | None = None,
          instance: str = "keyramp", timeout_s: float = 30.0) -> None:
    """Clear an emulator's data between cells, the way its store's spec says (Datastore:
    ``POST /reset``; Firestore: delete the documents; Bigtable: delete ``table`` or every
    table of ``instance``, which the runner recreates with ``Backend.prepare``)."""
    _check_kinds([kind])
    EMULATORS[kind].reset(endpoint, project=project, instance=instance, table=table, timeout_s=timeout_s)
