"""Max-min fair sharing of links by concurrent flows (the fluid network model).

Every flow crosses a set of links; at any moment each flow gets the rate that
progressive filling gives: all unfrozen flows grow together until a link is full,
the flows on that link are frozen at their share, and the others keep growing.
A flow alone gets the bottleneck of its route; ``k`` flows leaving one NIC get
``B / k`` each; ``k`` flows entering one NIC (incast) get ``B / k`` each.
:class:`FlowSet` advances such flows through time. This module imports only numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FlowSet", "max_min_rates"]

_EPS = 1e-12


def max_min_rates(flow_of, link_of, capacity, flows):
    """Max-min fair rate of every flow.

    Parameters
    ----------
    flow_of, link_of : numpy.ndarray of int
        One entry per (flow, link) crossing: flow ``flow_of[e]`` crosses link
        ``link_of[e]``.
    capacity : numpy.ndarray
        Bytes/s of every link.
    flows : int
        Number of flows.

    Returns
    -------
    numpy.ndarray
        Rate of each flow, bytes/s.

    Examples
    --------
    Two flows out of one NIC of 100 B/s, the second also into a NIC it shares
    with a third flow:

    >>> rates = max_min_rates(np.array([0, 0, 1, 1, 2, 2]),
    ...                       np.array([0, 1, 0, 2, 3, 2]),
    ...                       np.full(4, 100.0), 3)
    >>> rates.tolist()
    [50.0, 50.0, 50.0]
    """
    rates = np.zeros(flows)
    if flows == 0:
        return rates
    room = np.array(capacity, dtype=np.float64)
    links = len(room)
    live = np.ones(len(flow_of), dtype=bool)
    users = np.bincount(link_of, minlength=links).astype(np.float64)
    while live.any():
        busy = users > 0
        share = np.full(links, np.inf)
        share[busy] = np.maximum(room[busy], 0.0) / users[busy]
        level = share.min()
        full = busy & (share <= level * (1 + 1e-9) + _EPS)
        # every live flow crossing a full link is frozen at this level
        caught = np.zeros(flows, dtype=bool)
        caught[flow_of[live & full[link_of]]] = True
        rates[caught] = level
        leaving = live & caught[flow_of]
        gone = np.bincount(link_of[leaving], minlength=links)
        room -= gone * level
        users -= gone
        live &= ~leaving
    return rates


class FlowSet:
    """Flows in progress on a network, advanced event by event.

    Parameters
    ----------
    capacity : numpy.ndarray
        Bytes/s of every link.

    Examples
    --------
    Two 100-byte flows out of one 100 B/s NIC, the second starting 0.5 s later:

    >>> flows = FlowSet(np.full(3, 100.0))
    >>> flows.add("a", (0, 1), 100.0)
    >>> flows.advance(0.5)                    # "a" alone: 50 bytes sent
    []
    >>> flows.add("b", (0, 2), 100.0)
    >>> flows.next_finish()                   # then 50 B/s each
    1.5
    >>> flows.advance(1.5), flows.advance(flows.next_finish())
    (['a'], ['b'])
    """

    def __init__(self, capacity):
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.now = 0.0
        self._keys = []
        self._routes = []
        self._left = []
        self._size = []
        self._rates = None

    def __len__(self):
        return len(self._keys)

    def add(self, key, route, nbytes):
        """Start a flow of ``nbytes`` over the links ``route`` now (:attr:`now`)."""
        self._keys.append(key)
        self._routes.append(tuple(route))
        self._left.append(float(nbytes))
        self._size.append(float(nbytes))
        self._rates = None

    def rates(self):
        """Current rate of each flow in progress (in the order they were added)."""
        if self._rates is None:
            lengths = [len(r) for r in self._routes]
            flow_of = np.repeat(np.arange(len(self._routes)), lengths)
            link_of = (
                np.fromiter((i for r in self._routes for i in r), dtype=np.int64)
                if self._routes
                else np.zeros(0, dtype=np.int64)
            )
            self._rates = max_min_rates(
                flow_of, link_of, self.capacity, len(self._routes)
            )
        return self._rates

    def next_finish(self):
        """Time the next flow completes at the current rates (inf when none)."""
        if not self._keys:
            return np.inf
        rates = self.rates()
        return self.now + float(np.min(np.asarray(self._left) / rates))

    def advance(self, until):
        """Move to time ``until``; return the keys of flows finished on the way.

        ``until`` must not pass :meth:`next_finish` by more than rounding: flows
        finish exactly there, and rates change after. A flow finishes when what is
        left of it is rounding (a billionth of its size) or would take less time
        than the clock can resolve, so time always moves on.
        """
        if not self._keys:
            self.now = max(self.now, until)
            return []
        span = max(until - self.now, 0.0)
        rates = self.rates()
        left = np.asarray(self._left) - rates * span
        self.now = max(self.now, until)
        resolution = 1e-15 * max(1.0, abs(self.now))
        done = (left <= 1e-9 * np.asarray(self._size)) | (left <= rates * resolution)
        finished = [key for key, over in zip(self._keys, done, strict=True) if over]
        if finished:
            keep = ~done
            self._keys = [
                k for k, k_keep in zip(self._keys, keep, strict=True) if k_keep
            ]
            self._routes = [
                r for r, k_keep in zip(self._routes, keep, strict=True) if k_keep
            ]
            self._size = [
                n for n, k_keep in zip(self._size, keep, strict=True) if k_keep
            ]
            left = left[keep]
            self._rates = None
        self._left = left.tolist()
        return finished
