"""keyramp: load-testing harness for Google's NoSQL stores."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
