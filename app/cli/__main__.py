"""`python -m app.cli`."""

from app.cli import main

raise SystemExit(main())
