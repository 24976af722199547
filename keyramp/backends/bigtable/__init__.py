"""Bigtable: its spec (``_spec``), the table-admin client (``_admin``) and the official data
client driver (``_client``, loaded only when a run uses it)."""

from __future__ import annotations

from keyramp.backends.bigtable._spec import BIGTABLE, SPECS

__all__ = ["BIGTABLE", "SPECS"]
