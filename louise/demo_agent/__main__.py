"""`python -m louise.demo_agent`."""

import sys

from louise.demo_agent import main

sys.exit(main())
