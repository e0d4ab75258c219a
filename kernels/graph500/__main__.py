"""``python -m scaleprobe.kernels.graph500``."""

import sys

from . import main

sys.exit(main())
