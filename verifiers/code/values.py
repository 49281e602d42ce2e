"""Plain values: the only thing that crosses between a program and whoever judges it.

`pack(x)` reduces a value to *plain data* using the base types' own methods (so a subclass's
``__eq__``, ``__iter__`` or ``__str__`` is never called) and writes it as JSON-ready data:
None, bool, int, float and str as themselves, lists as lists, and every other type as a
one-key object: ``{"t": [...]}`` tuple, ``{"s": [...]}`` set, ``{"f": [...]}`` frozenset,
``{"d": [[k, v], ...]}`` dict, ``{"b": "latin-1 text"}`` bytes, ``{"c": [re, im]}`` complex,
``{"r": n}`` a handle (a remote object, see `proxy`). numpy arrays and scalars become Python
values. Anything else raises `NotPlain`.

A set arrives iterating in the order it was sent in (`ordered_set`), as the sender's set
iterated: what one process would see, for most sets (see `ordered_set` for which).

`unpack(data)` is the strict inverse: it accepts only that closed set of shapes, at most
``MAX_DEPTH`` deep, and raises `BadValue` on anything else; the result holds only exact
built-in values, whose ``==`` is the built-in one. The judging side never sees an object of
the program's.

`to_json(x)` is the call-based form (tuples -> lists, sets -> sorted lists, dict keys -> str)
that the parent compares with the expected JSON (`compare.value_matches`).
"""

from __future__ import annotations

import json
import sys
from builtins import (  # noqa: UP029 - bound here: a program patching builtins changes nothing
    TypeError,
    ValueError,
    bool,
    bytes,
    complex,
    dict,
    enumerate,
    float,
    frozenset,
    hash,
    int,
    isinstance,
    iter,
    len,
    list,
    next,
    range,
    set,
    sorted,
    str,
    tuple,
    type,
)
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 100
_dumps = json.dumps
_SCALARS = (type(None), bool, int, float, str)


class NotPlain(Exception):
    """The value is not plain data (a function, an object of the program's class, ...)."""


class BadValue(Exception):
    """Data that is not a packed plain value (wrong shape, unknown tag, too deep)."""


def _deeper(depth: int, error: type[Exception]) -> int:
    """The depth one level down from *depth*; *error* past MAX_DEPTH."""
    if depth > MAX_DEPTH:
        raise error("nested too deep")
    return depth + 1


def pack(x, ref=None, depth: int = 0):
    """``x`` as packed plain data (see module doc). ``ref(obj) -> int | None`` names objects
    that travel as handles (the judging side's proxies); None: no handles."""
    d = _deeper(depth, NotPlain)
    t = type(x)
    if t in _SCALARS:
        return x
    if t is list:
        return [pack(v, ref, d) for v in list.__iter__(x)]
    if t is tuple:
        return {"t": [pack(v, ref, d) for v in tuple.__iter__(x)]}
    if t is dict:
        return {"d": [[pack(k, ref, d), pack(v, ref, d)] for k, v in dict.items(x)]}
    if t is set or t is frozenset:
        return {"s" if t is set else "f": [pack(v, ref, d) for v in t.__iter__(x)]}
    if t is bytes:
        return {"b": bytes.decode(x, "latin-1")}
    if t is complex:
        return {"c": [complex.real.__get__(x), complex.imag.__get__(x)]}
    base: Any  # a base type, each loop's own
    for base, conv in ((bool, bool.__bool__), (int, int.__index__), (float, float.__float__),
                       (str, str.__str__), (bytes, bytes.__bytes__)):
        if isinstance(x, base):
            return pack(conv(x), ref, d)
    for base in (dict, tuple, list, set, frozenset):
        if isinstance(x, base):
            items = dict(dict.items(x)) if base is dict else base(base.__iter__(x))
            return pack(items, ref, d)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(np, type(sys)):
        if isinstance(x, np.ndarray):
            return pack(np.ndarray.tolist(x), ref, d)
        if isinstance(x, np.generic):
            return pack(np.generic.item(x), ref, d)
    if ref is not None:
        n = ref(x)
        if n is not None:
            return {"r": n}
    raise NotPlain(f"a {type.__getattribute__(t, '__name__')!s} is not a plain value")


def unpack(data, resolve=None, depth: int = 0):
    """Packed data -> exact built-in values; ``resolve(n)`` turns a handle into its object
    (None: handles are refused). Raises BadValue on anything outside the closed set."""
    d = _deeper(depth, BadValue)
    t = type(data)
    if t in _SCALARS:
        return data
    if t is list:
        return [unpack(v, resolve, d) for v in data]
    if t is not dict or len(data) != 1:
        raise BadValue(f"not a packed value: {t.__name__}")
    (tag, body), = data.items()
    try:
        if tag == "t" and type(body) is list:
            return tuple(unpack(v, resolve, d) for v in body)
        if tag in ("s", "f") and type(body) is list:
            items = [unpack(v, resolve, d) for v in body]
            return ordered_set(items) if tag == "s" else ordered_frozenset(items)
        if tag == "d" and type(body) is list:
            out = {}
            for kv in body:
                if type(kv) is not list or len(kv) != 2:
                    raise BadValue("a dict item is not a pair")
                out[unpack(kv[0], resolve, d)] = unpack(kv[1], resolve, d)
            return out
        if tag == "b" and type(body) is str:
            return body.encode("latin-1")
        if tag == "c" and type(body) is list and len(body) == 2 and \
                all(type(v) in (int, float) for v in body):
            return complex(body[0], body[1])
        if tag == "r" and type(body) is int and resolve is not None:
            return resolve(body)
    except (TypeError, ValueError) as e:  # an unhashable set item or key, bad latin-1
        raise BadValue(f"bad {tag!r} value: {e}") from None
    raise BadValue(f"unknown tag {tag!r}")


_LINEAR_PROBES, _PERTURB_SHIFT, _MASK64 = 9, 5, (1 << 64) - 1
WORK = 40_000  # probes (and slots built) `ordered_set` may spend on one table size


def _probes(h: int, mask: int):
    """The slots CPython's set_add_entry looks at, in order, for hash *h* (Objects/setobject.c:
    9 linear probes after the home slot where they fit, then the perturbed jump)."""
    perturb = h & _MASK64
    i = h & mask
    while True:
        yield from range(i, i + _LINEAR_PROBES + 1) if i + _LINEAR_PROBES <= mask else (i,)
        perturb >>= _PERTURB_SHIFT
        i = (i * 5 + 1 + perturb) & mask


def _filler(slot: int, size: int, members: set) -> int:
    """An int whose home slot is *slot* (``hash(n) == n``) and that is none of *members*."""
    f = slot + size * (1 << 40)
    while f in members:
        f += size << 41
    return f


def _choices(x, k: int, last: int, slot_of: dict, mask: int, n: int, work: list) -> list:
    """Up to 3 slots item *k* may take (past *last*, room left for the items after it), in its
    probe order, each with the slots its probes pass before it. Each probe costs a unit of
    ``work[0]``."""
    before: list[int] = []
    out: list[tuple[int, list[int]]] = []
    for steps, slot in enumerate(_probes(hash(x), mask)):
        work[0] -= 1
        if steps > 4 * (mask + 1) or len(out) == 3 or work[0] < 0:
            break
        if last < slot <= mask - (n - k - 1) and slot not in slot_of:
            out.append((slot, list(before)))
        before.append(slot)
    return out


def _layouts(items: list, size: int, work: list):
    """Layouts of *items* on increasing slots of a table of *size* (so the set iterates in their
    order), depth first over each item's first choices, while ``work[0]`` lasts:
    (slot -> item index, the slots each item's probes pass)."""
    mask, n = size - 1, len(items)
    slot_of: dict[int, int] = {}
    passed: list[list[int]] = []
    chosen: list[int] = []
    stack = [iter(_choices(items[0], 0, -1, slot_of, mask, n, work))]
    while stack and work[0] > 0:
        k = len(stack) - 1
        while len(chosen) > k:  # back from a deeper item: undo this item's last choice
            del slot_of[chosen.pop()]
            passed.pop()
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        slot, before = step
        slot_of[slot] = k
        passed.append(before)
        chosen.append(slot)
        if k + 1 == n:
            yield slot_of, passed
        else:
            stack.append(iter(_choices(items[k + 1], k + 1, slot, slot_of, mask, n, work)))


def _plan(items: list, slot_of: dict, passed: list) -> tuple[set, list, list] | None:
    """For a layout: (slots used, the slots of int fillers, the items in an order where each
    finds the slots its probes pass taken); None if the layout needs a cycle."""
    n = len(items)
    taken = set(slot_of)
    fill = {p for before in passed for p in before if p not in taken}
    after = [{slot_of[p] for p in before if p in taken} for before in passed]
    order, state = [], [0] * n  # an item goes in after the items on the slots it passes
    for k0 in range(n):
        stack = [(k0, iter(after[k0]))]
        while stack:
            k, deps = stack[-1]
            if state[k] == 2:
                stack.pop()
                continue
            state[k] = 1
            d = next(deps, None)
            if d is None:
                state[k] = 2
                order.append(items[k])
                stack.pop()
            elif state[d] == 1:
                return None  # a cycle: no insertion order gives this layout
            elif state[d] == 0:
                stack.append((d, iter(after[d])))
    return taken | fill, sorted(fill), order


def _counts(size: int, add: bool) -> tuple[int, int]:
    """The key counts that leave a table of *size*: ``set(dict)`` makes the smallest power of
    two over 2 * k (8 for k < 5); adding keys one by one grows it 8 -> 32 -> 128 -> 512."""
    if add:
        return {8: (0, 4), 32: (5, 18), 128: (19, 76), 512: (77, 306)}.get(size, (1, 0))
    return (0, 4) if size == 8 else (max(5, size // 4), size // 2 - 1)


def _build(fill: list, order: list, members: set, size: int, add: bool) -> set:
    """The fillers on their slots, then *order*, by ``set(dict)`` or one by one; fillers out."""
    fillers = [_filler(p, size, members) for p in fill]
    if add:
        out = set()
        for k in fillers + order:
            out.add(k)
    else:
        out = set(dict.fromkeys(fillers + order))
    for f in fillers:
        out.discard(f)
    return out


def ordered_set(items: list) -> set:
    """A set that iterates in the order of *items* (distinct values): the order the sender's set
    iterated in, so a program that does ``tuple(s)`` sees what one process would see. Insertion
    in that order gives it for most small sets; otherwise a layout of the items on increasing
    slots is searched (`_layouts`: CPython's probe order, `_probes`, a few table sizes, bounded
    by ``WORK`` per size, tens of ms at most), built with int fillers on the slots the probes
    pass (a removed filler's slot stays taken), and checked. Not covered: a set no layout tried
    reproduces (`python bench/set_order.py`, random sets of ints and str: 0.3% of those of 1-9
    items, 2% of 10-59, against 35% and 67-71% for a plain rebuild): it iterates as insertion
    in the sent order makes it."""
    s = set(items)
    if len(s) != len(items) or list(s) == items:
        return s
    fit, members = 8, set(items)
    while fit <= 2 * len(items):
        fit *= 2
    for size in (fit, fit // 2, fit * 2, fit // 4, fit * 4):  # the sender's is unknown
        if size < 8:
            continue
        work = [WORK]
        for slot_of, passed in _layouts(items, size, work):
            work[0] -= size + len(items)  # planning and building a candidate
            plan = _plan(items, slot_of, passed)
            if plan is None:
                continue
            used, fill, order = plan
            spare = [p for p in range(size) if p not in used]  # no probe of an item passes here
            for add in (False, True):
                low, high = _counts(size, add)
                pad = max(0, low - len(fill) - len(items))
                if len(fill) + len(items) + pad <= high and pad <= len(spare):
                    out = _build(sorted(fill + spare[:pad]), order, members, size, add)
                    if list(out) == items:
                        return out
    return s


def ordered_frozenset(items: list) -> frozenset:
    """A frozenset of *items*: in their order where insertion in that order gives it (a
    frozenset cannot have fillers removed; see `ordered_set`)."""
    return frozenset(items)


def plain(x):
    """``x`` reduced to exact built-in values (pack then unpack)."""
    return unpack(pack(x))


def _as_json(v):
    if type(v) is list:
        return [_as_json(i) for i in v]
    if type(v) is dict:
        (tag, body), = v.items()
        if tag == "t":
            return [_as_json(i) for i in body]
        if tag in ("s", "f"):
            return sorted((_as_json(i) for i in body), key=repr)
        if tag == "d":
            return {k if type(k) is str else str(unpack(k)): _as_json(i) for k, i in body}
        if tag == "c":
            return body
        return body  # bytes as latin-1 text
    return v


def to_json(x) -> str:
    """A call result as JSON text for the parent's comparison (raises NotPlain)."""
    return _dumps(_as_json(pack(x)))
