"""Prompt token sequences as a prefix tree, and its split into model rows over cached prefixes.

`trie_token_count` is the work that prefix sharing needs (distinct prefix-tree tokens): a pure
function that a run plan can call on tokenized prompts. `PromptTrie` and `plan_rows` are what
the `biasmonkey-hf` backend (hf_prefix.py) runs: every trie node goes through the model once.

Rows. A row holds trie nodes in depth-first (pre)order, each with `end`, one past the last row
index of its descendants within the row, so row node j is an ancestor-or-self of row node i
exactly when j <= i < end[j] (the 4D attention mask is built from that). Besides its own nodes a
row attends to the keys/values of a cached prefix: the path from the root to its `anchor` node
(none for anchor -1). Rows are planned per anchor: every child subtree of the anchor of at most
`row_tokens` tokens is one item; a larger child starts a spine item (see `_items`), whose spine
keys/values are kept: its nodes anchor the rows for what did not fit in it. Items of one anchor
are packed into rows of at most `row_tokens` tokens (best fit, largest first).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

ROOT = -1  # the (virtual) root: anchor of the rows that start at position 0


def trie_token_count(token_lists: Iterable[Sequence[int]]) -> int:
    """Distinct prefix-tree tokens of the sequences: the number of distinct non-empty prefixes.

    This is what a backend that computes every distinct prefix once runs through the model
    (before continuation tokens); compare with the sum of the distinct sequences' lengths."""
    distinct = sorted({tuple(t) for t in token_lists})
    total, previous = 0, ()
    for seq in distinct:
        shared = 0
        for a, b in zip(previous, seq):
            if a != b:
                break
            shared += 1
        total += len(seq) - shared
        previous = seq
    return total


@dataclass
class PromptTrie:
    """Token sequences sharing their prefixes. Node n holds `token[n]` at position `depth[n]`
    (0-based), below `parent[n]` (ROOT for a first token); a parent's id is below its children's."""

    token: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    children: list[dict[int, int]] = field(default_factory=list)
    roots: dict[int, int] = field(default_factory=dict)  # first token -> node

    def __len__(self) -> int:
        return len(self.token)

    def insert(self, tokens: Sequence[int], parent: int = ROOT) -> int:
        """Add `tokens` below `parent` (ROOT, or the node of a prefix already in the tree); the node
        of the last token (`parent` for no tokens). It walks the part already in the tree, then
        creates the rest."""
        children, depth = self.children, self.depth
        kids, node = (self.roots if parent == ROOT else children[parent]), parent
        for t in tokens:
            found = kids.get(t)
            if found is None:
                break
            node, kids = found, children[found]
        else:
            return node
        at = depth[node] + 1 if node != ROOT else 0  # the depth of the first new node
        start = depth[parent] + 1 if parent != ROOT else 0
        for t in tokens[at - start :]:
            new = kids[t] = len(self.token)
            self.token.append(t)
            self.parent.append(node)
            depth.append(at)
            children.append({})
            node, kids, at = new, children[new], at + 1
        return node

    def path_to(self, node: int, count: int) -> list[int]:
        """The last `count` nodes of the path from the root to `node`, root side first."""
        path = []
        for _ in range(count):
            if node == ROOT:
                raise ValueError(f"path_to: the path has fewer than {count} nodes")
            path.append(node)
            node = self.parent[node]
        return path[::-1]

    def kids(self, node: int) -> list[int]:
        return list((self.roots if node == ROOT else self.children[node]).values())

    def sizes(self) -> list[int]:
        """Tokens of each node's subtree (the node included)."""
        size = [1] * len(self.token)
        for node in range(len(self.token) - 1, -1, -1):
            if self.parent[node] != ROOT:
                size[self.parent[node]] += size[node]
        return size

    def preorder(self, node: int, size: list[int], nodes: list[int], ends: list[int]) -> None:
        """Append `node`'s subtree in preorder to `nodes`, and to `ends` one past each one's subtree."""
        stack = [node]
        while stack:
            n = stack.pop()
            ends.append(len(nodes) + size[n])
            nodes.append(n)
            stack.extend(reversed(self.children[n].values()))


@dataclass
class Row:
    """Trie nodes run as one model row over the cached path of `anchor` (see the module docstring)."""

    anchor: int
    nodes: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    spines: list[list[int]] = field(default_factory=list)  # row indices of kept spines, root side first


@dataclass
class _Item:
    nodes: list[int]
    ends: list[int]  # relative to the item's start
    spine: list[int]  # item indices of the kept spine (empty: none kept)


def _items(
    trie: PromptTrie, size: list[int], kids: list[int], row_tokens: int
) -> tuple[list[_Item], dict[int, list[int]]]:
    """Items for child subtrees `kids` of one anchor, and the anchors they open (node -> its children
    left for later rows).

    A subtree of at most `row_tokens` nodes is one item. A larger one starts a spine: its root,
    then down the heaviest child; each spine node's other children join the item whole while
    they fit, and are left to rows anchored at that node otherwise. The item is laid out as
    s0, s0's joined subtrees, s1, s1's joined subtrees, …, so that everything after a spine
    node is its descendant."""
    items, opened = [], {}
    for child in kids:
        nodes: list[int] = []
        ends: list[int] = []
        if size[child] <= row_tokens:
            trie.preorder(child, size, nodes, ends)
            items.append(_Item(nodes, ends, []))
            continue
        spine: list[int] = []
        left: dict[int, list[int]] = {}
        node: int | None = child
        while node is not None:
            spine.append(len(nodes))
            nodes.append(node)
            ends.append(0)
            budget = row_tokens - len(nodes)
            below = sorted(trie.children[node].values(), key=lambda k: size[k])
            heavy, node = (below.pop() if below else None), None
            for k in below:
                if size[k] <= budget:
                    trie.preorder(k, size, nodes, ends)
                    budget -= size[k]
                else:
                    left.setdefault(nodes[spine[-1]], []).append(k)
            if heavy is None:
                continue
            if size[heavy] <= budget:
                trie.preorder(heavy, size, nodes, ends)
            elif budget > 0:
                node = heavy
            else:
                left.setdefault(nodes[spine[-1]], []).append(heavy)
        for index in spine:
            ends[index] = len(nodes)
        kept = [i for i in spine if nodes[i] in left]
        items.append(_Item(nodes, ends, spine[: spine.index(kept[-1]) + 1] if kept else []))
        opened.update(left)
    return items, opened


def _pack(items: list[_Item], anchor: int, row_tokens: int) -> list[Row]:
    """Best-fit decreasing: each item into the fullest row it fits in."""
    rows: list[Row] = []
    free: list[tuple[int, int]] = []  # (free tokens, row), sorted
    for item in sorted(items, key=lambda i: -len(i.nodes)):
        n = len(item.nodes)
        k = bisect.bisect_left(free, (n, -1))
        if k < len(free):
            room, r = free.pop(k)
        else:
            room, r = max(row_tokens, n), len(rows)
            rows.append(Row(anchor))
        row = rows[r]
        offset = len(row.nodes)
        if item.spine:
            row.spines.append([offset + i for i in item.spine])
        row.nodes.extend(item.nodes)
        row.ends.extend(offset + e for e in item.ends)
        if room - n > 0:
            bisect.insort(free, (room - n, r))
    return rows


class RowPlanner:
    """The rows of `trie`, planned anchor by anchor when asked (`take`): an executor plans the rows
    below a kept spine once the forward that computes it is queued, not all before the first."""

    def __init__(self, trie: PromptTrie, row_tokens: int) -> None:
        if row_tokens < 1:
            raise ValueError(f"row_tokens must be positive, not {row_tokens}")
        self.trie, self.row_tokens = trie, row_tokens
        self.rows: list[Row] = []
        self._size = trie.sizes()
        self._open: dict[int, list[int]] = {ROOT: trie.kids(ROOT)}  # anchor -> its children left for rows
        self._planned: dict[int, list[int]] = {}  # anchor -> its rows (indices into `rows`), not yet taken

    def _plan(self, anchor: int) -> list[int]:
        """Rows for `anchor`'s open children; the anchors they open (nodes of their kept spines)."""
        items, opened = _items(self.trie, self._size, self._open.pop(anchor), self.row_tokens)
        self.rows += _pack(items, anchor, self.row_tokens)
        self._open.update(opened)
        return list(opened)

    def take(self, anchor: int) -> list[int]:
        """The rows over `anchor`'s cached path (none if it anchors none), each returned once."""
        if anchor in self._planned:
            return self._planned.pop(anchor)
        if anchor not in self._open:
            return []
        start = len(self.rows)
        self._plan(anchor)
        return list(range(start, len(self.rows)))

    def plan_all(self) -> list[Row]:
        """Every row, anchors depth-first, in the order `plan_rows` gives them (each still to `take`)."""
        work = list(reversed(self._open))
        while work:
            anchor, start = work.pop(), len(self.rows)
            work += reversed(self._plan(anchor))
            self._planned[anchor] = list(range(start, len(self.rows)))
        return self.rows

    @property
    def left(self) -> int:
        """Anchors whose rows were never taken."""
        return len(self._open) + len(self._planned)


def plan_rows(trie: PromptTrie, row_tokens: int) -> list[Row]:
    """Every node of `trie` in exactly one row. A row's anchor is ROOT or a node of a kept spine
    of another row (which the executor runs first)."""
    return RowPlanner(trie, row_tokens).plan_all()
