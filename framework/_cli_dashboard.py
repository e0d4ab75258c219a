"""``scaleprobe dashboard STORE``: serve the sweep page of a results store."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]

BAD_INPUT = 2


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"must be a port number from 0 (any free port) to 65535, got {text!r}"
        )
    return value


def _dashboard(args) -> int:
    from pathlib import Path

    from .dashboard import serve_store

    if not Path(args.store).exists():
        print(
            f"scaleprobe: error: no results store at {args.store}; give the output "
            "of a sweep (e.g. results/demo.zarr)",
            file=sys.stderr,
        )
        return BAD_INPUT

    def announce(link):
        print(f"scaleprobe: sweep page of {args.store} at {link} (Ctrl-C stops)")
        sys.stdout.flush()

    try:
        serve_store(args.store, port=args.port, announce=announce)
    except OSError as error:
        reason = error.strerror or str(error)
        print(
            f"scaleprobe: error: cannot listen on port {args.port} ({reason}); "
            "choose another with --port (0: any free port)",
            file=sys.stderr,
        )
        return BAD_INPUT
    except KeyboardInterrupt:
        print("scaleprobe: sweep page stopped")
    return 0


def register(subparsers) -> None:
    """Add the ``dashboard`` subcommand.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``; the subcommand sets ``handler(args) -> int``.
    """
    dashboard = subparsers.add_parser(
        "dashboard",
        help="serve the sweep page of a results store",
        description="Serve the sweep page a running sweep shows (grid of points, "
        "plot of the measured time against nodes with the live projection, failed "
        "points with their error) for a results store, after its sweep ended. "
        "Prints the address and serves until Ctrl-C.",
    )
    dashboard.add_argument("store", help="results store (e.g. results/demo.zarr)")
    dashboard.add_argument(
        "--port",
        type=_port,
        default=8787,
        help="port to listen on, on 127.0.0.1 (default: 8787; 0: any free port)",
    )
    dashboard.set_defaults(handler=_dashboard)
