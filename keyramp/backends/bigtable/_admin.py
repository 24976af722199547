"""The Bigtable table-admin client (built here only) and the emulator reset that uses it.

Every table-admin call keyramp makes goes through ``admin_client``: the drivers' ``prepare``
and clean-up, and ``reset`` between cells on an emulator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from keyramp.core import EmulatorError

__all__ = ["admin_client", "reset"]


@contextlib.contextmanager
def admin_client(endpoint: str | None) -> Iterator[Any]:
    """A table-admin client for an emulator endpoint or the real service; an emulator's
    channel is closed on exit."""
    import grpc  # deferred: start-up cost (grpc)
    from google.cloud.bigtable_admin_v2 import BaseBigtableTableAdminClient  # deferred: start-up cost (google)
    from google.cloud.bigtable_admin_v2.services.bigtable_table_admin.transports import (  # deferred: start-up cost
        BigtableTableAdminGrpcTransport,
    )

    if endpoint is None:
        yield BaseBigtableTableAdminClient()
        return
    channel = grpc.insecure_channel(endpoint)
    try:
        yield BaseBigtableTableAdminClient(transport=BigtableTableAdminGrpcTransport(channel=channel))
    finally:
        channel.close()


def reset(endpoint: str, *, project: str, instance: str, table: str | None, timeout_s: float) -> None:
    """Delete ``table`` (or every table of ``instance``); the runner recreates the cell's table
    with ``Backend.prepare``."""
    from google.api_core import exceptions as gexc  # deferred: start-up cost (google.api_core)

    try:
        with admin_client(endpoint) as admin:
            parent = f"projects/{project}/instances/{instance}"
            names = ([f"{parent}/tables/{table}"] if table else
                     [t.name for t in admin.list_tables(parent=parent, retry=None, timeout=timeout_s)])
            for name in names:
                with contextlib.suppress(gexc.NotFound):
                    admin.delete_table(name=name, retry=None, timeout=timeout_s)
    except gexc.GoogleAPICallError as exc:
        raise EmulatorError(f"reset of bigtable emulator at {endpoint} failed: {exc}") from None
