"""keyramp: load-testing harness for Google's NoSQL stores."""

from __future__ import annotations

import os as _os

__all__ = ["__version__"]

__version__ = "0.1.0"

# gRPC's C core re-arms its event engine in a forked child. gevent's subprocess forks with
# Python code running before exec, so an emulator started by a process that already has
# channels (the second profile of one `keyramp run`) aborted in the child with
# "Epoll1Poller … epoll_wait error: Bad file descriptor" (exit -6). keyramp never forks
# processes that use gRPC (workers are exec'd), so fork support only does harm here.
# Read when gRPC initialises: it must be set before the first channel exists.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
