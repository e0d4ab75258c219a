"""``python -m scaleprobe.kernels.subgraph``: the command line (see ``_cli``)."""

from scaleprobe.kernels.subgraph._cli import main

if __name__ == "__main__":
    main()
