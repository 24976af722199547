"""Small helpers the store specs use to describe their emulators: commands, health, HTTP resets.

The emulator *manager* (start, reuse, stop, state file) is generic and lives in
``keyramp.targets._emulators``; what is particular to one emulator (its jar, its reset
endpoint) is in that store's ``_spec.py``, built from these helpers.
"""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from keyramp.core import EmulatorError

__all__ = ["grpc_ready", "http_ok", "http_reset", "java_command"]


def java_command(sdk: Path, jar: str, main: str) -> list[str]:
    """``java -cp <sdk>/<jar> <main>`` (launched directly, not through ``gcloud``, so the
    process group holds the JVM and ``down`` can stop it)."""
    java = shutil.which("java") or "java"
    return [java, "-Duser.language=en", "-cp", str(sdk / jar), main]


def http_ok(endpoint: str, timeout: float = 1.0) -> bool:
    """The Java emulators answer ``GET /`` with ``Ok`` once they serve."""
    try:
        with urllib.request.urlopen(f"http://{endpoint}/", timeout=timeout) as resp:
            return bool(resp.read(16).strip() == b"Ok")
    except (OSError, urllib.error.URLError):
        return False


def grpc_ready(endpoint: str, timeout: float = 1.0) -> bool:
    """A gRPC-only emulator is up once a channel to it becomes ready."""
    import grpc  # deferred: start-up cost (grpc: `keyramp emulators status` needs none)

    channel = grpc.insecure_channel(endpoint)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


def http_reset(kind: str, endpoint: str, path: str, *, method: str, timeout_s: float) -> None:
    """One HTTP call that clears an emulator; ``EmulatorError`` (one line) if it fails."""
    req = urllib.request.Request(f"http://{endpoint}{path}", method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            resp.read()
    except (OSError, urllib.error.URLError) as exc:
        raise EmulatorError(f"reset of {kind} emulator at {endpoint} failed: {exc}") from None
