"""Firestore (native mode): its spec (``_spec``) and the official client driver (``_client``,
loaded only when a run uses it)."""

from __future__ import annotations

from keyramp.backends.firestore._spec import FIRESTORE, SPECS

__all__ = ["FIRESTORE", "SPECS"]
