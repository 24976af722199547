"""gRPC under gevent (Locust's event loop).

Without ``grpc.experimental.gevent.init_gevent()`` a gevent process runs one unary gRPC call
at a time (every user waits on the same blocking C call) and streaming calls (Firestore
``document.get()``, Bigtable reads) freeze the hub, so ``-t`` and SIGTERM stop working.
It must run after ``gevent.monkey.patch_all()`` (Locust does that on import) and before
the first channel is created; it hands blocking completion-queue waits to gevent's thread
pool.
"""

from __future__ import annotations

__all__ = ["ensure_gevent_grpc", "gevent_grpc_active"]


def gevent_grpc_active() -> bool:
    """Whether gRPC's gevent integration is on in this process."""
    from grpc._cython import cygrpc  # deferred: start-up cost (grpc)

    # grpc keeps its own flag; reading it keeps this idempotent without a second global.
    return bool(getattr(cygrpc, "g_gevent_activated", False))


def ensure_gevent_grpc() -> None:
    """Turn on gRPC's gevent integration once; a no-op when already active.

    Raises ``RuntimeError`` when the standard library is not monkey-patched yet: patching
    afterwards would leave gRPC's pool on real threads the hub cannot see.
    """
    import gevent.monkey  # deferred: import order (after Locust patches the standard library)

    if not gevent.monkey.is_module_patched("socket") or not gevent.monkey.is_module_patched("threading"):
        raise RuntimeError("gevent.monkey.patch_all() must run first (import locust before keyramp's runner)")
    if gevent_grpc_active():
        return
    import grpc.experimental.gevent as grpc_gevent  # deferred: import order (after gevent.monkey.patch_all)

    grpc_gevent.init_gevent()
