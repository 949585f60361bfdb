"""``python -m mem_pipeline.cli``: the same as the ``mem-pipeline`` command."""

import sys

from . import main

sys.exit(main())
