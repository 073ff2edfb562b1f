"""`python -m engine.cli ...`: the engine's commands without the web package's."""

import sys

from engine.cli.main import main

sys.exit(main())
