"""One small decorator registry per plug-point (methods, verifiers, generators, tasks).

A registry knows the modules that populate it and imports them on first use, so that
``import dapo_bench.verifiers.math`` never imports torch just because methods exist.

    METHODS = Registry("method", modules=["dapo_bench.methods.dapo"])

    @METHODS.register("dapo", help="DAPO (Liu et al., step-level)")
    def train_dapo(...): ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from dapo_bench.errors import UserError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    obj: T
    help: str = ""
    meta: dict = field(default_factory=dict)


class Registry(Generic[T]):
    """Name -> object, with a duplicate-name check and lazy population."""

    def __init__(self, kind: str, modules: list[str] | tuple[str, ...] = ()):
        self.kind = kind
        self._modules = list(modules)
        self._entries: dict[str, Entry[T]] = {}
        self._loaded = False

    def register(self, name: str, *, help: str = "", **meta: Any) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self.add(name, obj, help=help, **meta)
            return obj

        return deco

    def add(self, name: str, obj: T, *, help: str = "", **meta: Any) -> None:
        old = self._entries.get(name)
        if old is not None and old.obj is not obj:
            raise ValueError(f"{self.kind} {name!r} is registered twice ({old.obj!r} and {obj!r})")
        self._entries[name] = Entry(name, obj, help, dict(meta))

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules that populate the registry (known without importing them)."""
        return tuple(self._modules)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for mod in self._modules:
            importlib.import_module(mod)

    def entry(self, name: str) -> Entry[T]:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise UserError(f"unknown {self.kind} {name!r} (known: {known})") from None

    def get(self, name: str) -> T:
        return self.entry(name).obj

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def registered(self) -> list[Entry[T]]:
        """The entries registered so far, by name, without importing the registry's modules."""
        return sorted(self._entries.values(), key=lambda e: e.name)

    def __iter__(self) -> Iterator[Entry[T]]:
        self._load()
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries
