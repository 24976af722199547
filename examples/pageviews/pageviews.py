"""A page-view counter: an application's own code, written with the official Firestore client
only (no keyramp classes), with its own retry policy.

Two designs of the same counter:

* ``single``: one document per page, ``views`` incremented on every view — Firestore asks to
  keep writes to one document low ("Reduce the write rate to individual documents");
* ``sharded``: the distributed counter Firestore recommends — ``--shards`` documents under the
  page, each view increments a random one, the count is their sum.

Run it against the store-like target (README.md beside this file):

    eval "$(keyramp emulators up firestore --fidelity store --scale 10)"
    python examples/pageviews/pageviews.py --design single     # fails after its retries
    python examples/pageviews/pageviews.py --design sharded    # survives

Exit code 0 when at most 1 % of the views were lost after retries, else 1.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions
from google.cloud import firestore

T = TypeVar("T")

#: What the app retries: contention, overload, a deadline, the service briefly away.
RETRYABLE = (exceptions.Aborted, exceptions.ResourceExhausted, exceptions.DeadlineExceeded,
             exceptions.ServiceUnavailable)


class Retries:
    """Exponential backoff with full jitter: attempt n waits up to base × 2**n (capped)."""

    def __init__(self, *, attempts: int = 5, base_s: float = 0.05, cap_s: float = 1.0, seed: int = 0) -> None:
        self.attempts, self.base_s, self.cap_s = attempts, base_s, cap_s
        self.random = random.Random(seed)
        self.retried = 0

    def call(self, fn: Callable[[], T]) -> T:
        for attempt in range(self.attempts):
            try:
                return fn()
            except RETRYABLE:
                if attempt == self.attempts - 1:
                    raise
                self.retried += 1
                time.sleep(self.random.uniform(0, min(self.cap_s, self.base_s * 2 ** attempt)))
        raise AssertionError("unreachable")


class SingleCounter:
    def __init__(self, db: firestore.Client, page: str) -> None:
        self.doc = db.collection("pages").document(page)

    def view(self) -> None:
        # retry=None: the app's own policy (Retries) decides, not the client's default one
        self.doc.set({"views": firestore.Increment(1)}, merge=True, retry=None)

    def count(self) -> int:
        snap = self.doc.get()
        return int(snap.get("views")) if snap.exists else 0


class ShardedCounter:
    def __init__(self, db: firestore.Client, page: str, shards: int, seed: int = 0) -> None:
        self.shards = db.collection("pages").document(page).collection("shards")
        self.n = shards
        self.random = random.Random(seed)

    def view(self) -> None:
        shard = self.shards.document(str(self.random.randrange(self.n)))
        shard.set({"views": firestore.Increment(1)}, merge=True, retry=None)

    def count(self) -> int:
        return sum(int(s.get("views")) for s in self.shards.stream())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--design", choices=("single", "sharded"), required=True)
    parser.add_argument("--page", default=f"home-{int(time.time())}")
    parser.add_argument("--rate", type=float, default=3.0, help="views per second (default 3)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--project", default="pageviews-demo")
    args = parser.parse_args(argv)
    db = firestore.Client(project=args.project)
    counter = (SingleCounter(db, args.page) if args.design == "single"
               else ShardedCounter(db, args.page, args.shards))
    retries = Retries()
    ok = lost = 0
    errors: dict[str, int] = {}
    start = time.monotonic()
    views = int(args.rate * args.seconds)
    for i in range(views):
        time.sleep(max(0.0, start + i / args.rate - time.monotonic()))
        try:
            retries.call(counter.view)
            ok += 1
        except RETRYABLE as exc:  # given up after its retries: this view is lost
            lost += 1
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
    counted = counter.count()
    share = lost / views if views else 0.0
    print(f"{args.design}: {views} views, {ok} counted ({counted} in the store), {lost} lost after retries "
          f"({share:.1%}), {retries.retried} retries{'; ' + str(errors) if errors else ''}")
    return 0 if share <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
