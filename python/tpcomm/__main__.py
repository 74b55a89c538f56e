"""`python -m tpcomm ARGS` == `tpcomm ARGS` (the bundled CLI)."""
import sys

from .cli import main

sys.exit(main())
