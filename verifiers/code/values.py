"""Plain values: the only thing that crosses between a program and whoever judges it.

`pack(x)` reduces a value to *plain data* using the base types' own methods (so a subclass's
``__eq__``, ``__iter__`` or ``__str__`` is never called) and writes it as JSON-ready data:
None, bool, int, float and str as themselves, lists as lists, and every other type as a
one-key object: ``{"t": [...]}`` tuple, ``{"s": [...]}`` set, ``{"f": [...]}`` frozenset,
``{"d": [[k, v], ...]}`` dict, ``{"b": "latin-1 text"}`` bytes, ``{"c": [re, im]}`` complex,
``{"r": n}`` a handle (a remote object, see `proxy`). numpy arrays and scalars become Python
values. Anything else raises `NotPlain`.

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
    float,
    frozenset,
    int,
    isinstance,
    len,
    list,
    set,
    sorted,
    str,
    tuple,
    type,
)

MAX_DEPTH = 100
_dumps = json.dumps
_SCALARS = (type(None), bool, int, float, str)


class NotPlain(Exception):
    """The value is not plain data (a function, an object of the program's class, ...)."""


class BadValue(Exception):
    """Data that is not a packed plain value (wrong shape, unknown tag, too deep)."""


def pack(x, ref=None, depth: int = 0):
    """``x`` as packed plain data (see module doc). ``ref(obj) -> int | None`` names objects
    that travel as handles (the judging side's proxies); None: no handles."""
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deep")
    t = type(x)
    if t in _SCALARS:
        return x
    d = depth + 1
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
    if depth > MAX_DEPTH:
        raise BadValue("nested too deep")
    t = type(data)
    if t in _SCALARS:
        return data
    d = depth + 1
    if t is list:
        return [unpack(v, resolve, d) for v in data]
    if t is not dict or len(data) != 1:
        raise BadValue(f"not a packed value: {t.__name__}")
    (tag, body), = data.items()
    try:
        if tag == "t" and type(body) is list:
            return tuple(unpack(v, resolve, d) for v in body)
        if tag in ("s", "f") and type(body) is list:
            return (set if tag == "s" else frozenset)(unpack(v, resolve, d) for v in body)
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
