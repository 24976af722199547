from __future__ import annotations

from keyramp._cli import main

raise SystemExit(main())
