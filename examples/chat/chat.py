"""A chat service on Firestore: send messages, list a room's latest messages, open one.

Each message is a document in the cell's collection (``self.namespace``) with the shape of
``chat.toml``'s ``[workload.document]``: its room, an indexed ``sent_at``, the text, the
sender. ``history`` is the app's listing query: a room's 20 newest messages, newest first
(on the real service it needs the composite index ``room ASC, sent_at DESC``).

    keyramp run examples/chat/chat.toml                        # paced, recorded, both key designs
    keyramp emulators up firestore && locust -f examples/chat/chat.py --headless -u 10 -r 10 -t 30s
"""

from __future__ import annotations

from google.cloud import firestore
from google.cloud.firestore_v1.base_query import FieldFilter

import keyramp


class Chat(keyramp.FirestoreUser):
    @keyramp.op(weight=10)
    def send(self):
        """Post a message: a new document whose id is the key design under test."""
        key = self.keys.new()
        message = self.document()  # room, sent_at (this key's time), text, sender
        self.client.collection(self.namespace).document(key).set(message, **self.no_retry)
        return key

    @keyramp.op(weight=2)
    def history(self):
        """Open a room: its 20 newest messages."""
        room = self.document(self.keys.existing_index())["room"]
        query = (self.client.collection(self.namespace)
                 .where(filter=FieldFilter("room", "==", room))
                 .order_by("sent_at", direction=firestore.Query.DESCENDING)
                 .limit(20))
        newest = None
        for snap in query.stream(**self.no_retry):
            newest = newest or snap.id
        return newest  # the first message shown: where the read landed

    @keyramp.op(weight=2)
    def open_message(self):
        """Follow a link to one message."""
        key = self.keys.existing()
        self.client.collection(self.namespace).document(key).get(**self.no_retry)
        return key
