"""``python -m scaleprobe.kernels.graph500``."""

import sys

from .cli import main

sys.exit(main())
