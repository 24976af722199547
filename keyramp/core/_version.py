"""keyramp's version, in the bottom layer so every layer can name it (user agent, run manifest,
``--version``, web footer) without importing the package facade above them all."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
