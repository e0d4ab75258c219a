"""``python -m scaleprobe.kernels.subgraph``."""

import sys

from scaleprobe.kernels.subgraph import main

sys.exit(main())
