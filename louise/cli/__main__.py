"""`python -m louise.cli`: the `louise` command (see louise/cli/main.py)."""

import sys

from louise.cli.main import main

sys.exit(main())
