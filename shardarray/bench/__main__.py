"""``python -m shardarray.bench``: the same as the ``shardarray-bench`` command."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
