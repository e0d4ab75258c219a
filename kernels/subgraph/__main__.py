"""``python -m scaleprobe.kernels.subgraph``: see :mod:`scaleprobe.kernels.subgraph._cli`."""

from scaleprobe.kernels.subgraph._cli import main

if __name__ == "__main__":
    main()
