"""Firestore (native mode): the official client driver (``_client``)."""

from __future__ import annotations

from keyramp.backends.firestore._client import FirestoreBackend, doc_id, make_firestore_client

__all__ = ["FirestoreBackend", "doc_id", "make_firestore_client"]
