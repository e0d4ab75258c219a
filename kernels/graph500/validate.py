"""The five Graph500 validation rules, checked against the input edge list.

1. **tree**: the root is its own parent, every parent is a vertex id or -1, and
   following parents from any reached vertex ends at the root (no cycle);
2. **levels**: levels are consistent, i.e. every reached vertex's parent is reached
   too, so that level(v) = level(parent(v)) + 1 is defined along the whole tree;
3. **edge levels**: every input edge whose ends are both reached joins vertices whose
   levels differ by at most one;
4. **component**: no input edge has exactly one reached end (the tree spans the root's
   connected component);
5. **tree edges**: every tree edge (v, parent(v)), v != root, is an input edge.

Distribution: the owned parent arrays are gathered on every rank (8 bytes per vertex)
and levels are computed there by pointer doubling (log2(depth) vectorized passes);
rules 3-5 are checked by each rank on the slice of the edge list it generated, and the
per-rule violation counts are summed over ranks, so every rank returns the same verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._exchange import allgatherv_array

__all__ = ["RULES", "ValidationResult", "tree_levels", "validate_bfs"]

_EDGE_CHUNK = 1 << 20  # edges checked per vectorized step (bounds temporaries)

RULES = ("tree", "levels", "edge levels", "component", "tree edges")

_MESSAGES = (
    "the parent array is not a tree rooted at the root ({} vertices on a cycle, with "
    "an invalid parent, or a root that is not its own parent)",
    "levels are inconsistent: {} reached vertices descend from a vertex that is not "
    "in the tree",
    "{} input edges join reached vertices whose levels differ by more than one",
    "the tree does not span the root's component: {} input edges have exactly one "
    "reached end",
    "{} tree edges (vertex, parent) are not edges of the input graph",
)


@dataclass(frozen=True)
class ValidationResult:
    """The verdict on one BFS.

    Attributes
    ----------
    valid : bool
        True if all five rules hold.
    violations : tuple of int
        Violation count per rule (see :data:`RULES`).
    reason : str
        The first failing rule explained, or "".
    """

    valid: bool
    violations: tuple[int, ...]
    reason: str

    @property
    def failed_rules(self) -> list[str]:
        """Names of the rules that do not hold."""
        return [
            name for name, count in zip(RULES, self.violations, strict=False) if count
        ]


def tree_levels(pred: np.ndarray, root: int) -> tuple[np.ndarray, int, int]:
    """Levels of a global parent array by pointer doubling.

    Parameters
    ----------
    pred : numpy.ndarray of int64
        Parent of every vertex, -1 where unreached.
    root : int
        The BFS root.

    Returns
    -------
    level : numpy.ndarray of int64
        Distance to the root along the tree, -1 where unreached or undefined.
    tree_errors : int
        Reached vertices on a cycle or with an out-of-range parent, plus one if the
        root is not its own parent (rule 1).
    level_errors : int
        Reached vertices whose ancestry leaves the tree (rule 2).

    Examples
    --------
    >>> tree_levels(np.array([1, 1, 1, -1, 2]), root=1)
    (array([ 1,  0,  1, -1,  2]), 0, 0)
    """
    n = pred.size
    bad_parent = (pred < -1) | (pred >= n)
    tree_errors = int(bad_parent.sum()) + int(
        not (0 <= root < n and pred[root] == root)
    )
    sink = n  # stands for "left the tree"
    ancestor = np.where(pred < 0, sink, pred)
    ancestor[bad_parent] = sink
    ancestor = np.append(ancestor, sink)
    reached = np.append(pred >= 0, False)
    reached[n] = False
    if 0 <= root < n:
        ancestor[root] = root
    depth = np.append((pred >= 0).astype(np.int64), 0)
    if 0 <= root < n:
        depth[root] = 0
    depth[n] = 0
    for _ in range(max(1, int(n).bit_length()) + 1):
        depth += depth[ancestor]
        ancestor = ancestor[ancestor]
    ancestor, depth, reached = ancestor[:n], depth[:n], reached[:n]
    reached &= ~bad_parent
    in_tree = reached & (ancestor == root)
    left_tree = reached & (ancestor == sink)
    on_cycle = reached & ~in_tree & ~left_tree
    level = np.where(in_tree, depth, -1)
    return level, tree_errors + int(on_cycle.sum()), int(left_tree.sum())


def validate_bfs(comm, pred_owned, root, source, target) -> ValidationResult:
    """Collective: check one BFS against the five rules.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    pred_owned : numpy.ndarray of int64
        This rank's owned parents (vertex blocks in rank order).
    root : int
        The BFS root.
    source, target : numpy.ndarray
        The slice of the input edge list this rank generated.

    Returns
    -------
    ValidationResult
        The same on every rank.
    """
    pred = allgatherv_array(comm, np.ascontiguousarray(pred_owned, dtype=np.int64))
    level, tree_errors, level_errors = tree_levels(pred, int(root))
    level = level.astype(np.int32)
    has_edge = np.zeros(pred.size, dtype=np.uint8)
    edge_level_errors = component_errors = 0
    for lo in range(0, source.size, _EDGE_CHUNK):
        u, v = source[lo : lo + _EDGE_CHUNK], target[lo : lo + _EDGE_CHUNK]
        level_u, level_v = level[u], level[v]
        reached_u, reached_v = level_u >= 0, level_v >= 0
        component_errors += int(np.count_nonzero(reached_u != reached_v))
        difference = level_u - level_v
        far = (difference > 1) | (difference < -1)
        far &= reached_u
        far &= reached_v
        edge_level_errors += int(np.count_nonzero(far))
        has_edge[u[pred[u] == v]] = 1
        has_edge[v[pred[v] == u]] = 1
    if comm.size > 1:
        from mpi4py import MPI

        total = np.empty_like(has_edge)
        comm.Allreduce(has_edge, total, op=MPI.MAX)
        has_edge = total
    needs_edge = pred >= 0
    needs_edge[int(root)] = False
    tree_edge_errors = int((needs_edge & (has_edge == 0)).sum())
    local = np.array([0, 0, edge_level_errors, component_errors, 0], dtype=np.int64)
    if comm.size > 1:
        summed = np.empty_like(local)
        comm.Allreduce(local, summed)
        local = summed
    violations = (tree_errors, level_errors, *map(int, local[2:4]), tree_edge_errors)
    reason = ""
    for rule, count in enumerate(violations):
        if count:
            reason = f"rule {rule + 1} ({RULES[rule]}): " + _MESSAGES[rule].format(
                count
            )
            break
    return ValidationResult(not any(violations), tuple(violations), reason)
