"""Cloud Datastore and Firestore in Datastore mode: their specs (``_spec``) and the official
client driver (``_client``, loaded only when a run uses it)."""

from __future__ import annotations

from keyramp.backends.datastore._spec import DATASTORE, FIRESTORE_DATASTORE, SPECS

__all__ = ["DATASTORE", "FIRESTORE_DATASTORE", "SPECS"]
