"""Bigtable: the official data client driver (``_client``)."""

from __future__ import annotations

from keyramp.backends.bigtable._client import FAMILY, BigtableBackend, admin_client, encode_value, row_key

__all__ = ["FAMILY", "BigtableBackend", "admin_client", "encode_value", "row_key"]
