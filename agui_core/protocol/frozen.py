"""Frozen attrs objects built with plain slot stores, not through their ``__init__``.

A frozen attrs class refuses attribute stores, so its generated ``__init__`` writes each slot
through ``object.__setattr__``: a C call with its arguments packed and unpacked, per field. A
class of a dozen fields costs about a microsecond to build that way, and calling a class costs
a few hundred nanoseconds more than calling a function. The decoders (the codec's structure
functions, the one-walk input decoder) and the thread machine's records are built often enough
for that to show.

The way around both: a *builder* of the class (:func:`builder_class`), a subclass that adds no
slot and takes ``object``'s ``__setattr__`` back, so its slots take plain attribute stores,
which CPython specialises; once they are filled, ``__class__ = cls`` makes the object a plain
``cls`` object (CPython allows it between classes of the same layout). :func:`maker` turns
that into a function that takes exactly the keywords of ``cls(...)`` and gives an equal
object; the decoders inline the stores in their generated code.

What is skipped is ``__init__``, so only a class with nothing in it but stores may be built so:
:func:`check_plain` refuses one with a validator, a converter, an init hook or a cached hash,
and :func:`maker` one whose ``__init__`` is not attrs' own or that has a ``__new__``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import attrs

__all__ = ["MAKERS", "builder_class", "check_plain", "check_slot", "maker"]

P = ParamSpec("P")
T = TypeVar("T")

_BUILDERS: dict[type[Any], type[Any]] = {}

MAKERS: dict[type[Any], Callable[..., Any]] = {}
"""Every :func:`maker` made, by its class (one per class)."""


def builder_class(cls: type[Any]) -> type[Any]:
    """The class a ``cls`` object is built as, then turned into ``cls`` (one per class: every
    generated builder of ``cls`` objects shares it).

    It adds no slot and takes back ``object``'s ``__setattr__``, ``__delattr__`` and
    ``__init__``. What leaves a builder's code is a plain ``cls`` object; no builder object ever does.
    """
    known = _BUILDERS.get(cls)
    if known is not None:
        return known
    builder: type[Any] = type(
        f"{cls.__name__}Builder",
        (cls,),
        {
            "__slots__": (),
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__init__": object.__init__,
            "__module__": __name__,
        },
    )
    probe = builder()
    probe.__class__ = cls  # raises TypeError here, at import, should the layouts ever differ
    _BUILDERS[cls] = builder
    return builder


def check_slot(cls: type[Any], name: str) -> None:
    """Refuse (at import) an attribute of ``cls`` its :func:`builder_class` could not fill with a plain store."""
    if not isinstance(cls.__dict__.get(name), types.MemberDescriptorType):
        raise TypeError(f"{cls.__name__}.{name} is not a plain slot")


def check_plain(cls: type[Any]) -> None:
    """Refuse (``TypeError``, at import) a class whose objects would be built wrongly without
    its ``__init__``: one with an attrs validator or converter, an init hook, or a cached hash
    (``__init__`` resets it)."""
    for field in attrs.fields(cls):
        if field.validator is not None or field.converter is not None:
            raise TypeError(
                f"{cls.__name__}.{field.name} has an attrs validator or converter, which building "
                "it without its __init__ would skip"
            )
    for hook in ("__attrs_pre_init__", "__attrs_post_init__"):
        if hasattr(cls, hook):
            raise TypeError(f"{cls.__name__} defines {hook}, which building it without its __init__ would skip")
    if "_attrs_cached_hash" in getattr(cls, "__slots__", ()):
        raise TypeError(f"{cls.__name__} caches its hash, which building it without its __init__ would leave unset")


def maker(cls: Callable[P, T]) -> Callable[P, T]:
    """A function that takes exactly the arguments of ``cls(...)`` (a frozen, slotted attrs
    class) and gives the equal ``cls`` object, about three times as fast (see the module docstring).

    Keyword-only, as the classes built so are; defaults and factories are the fields' own.
    Typed as ``cls`` is called, so a checker judges each call as it would the class's.
    """
    klass: type[Any] = cls  # type: ignore[assignment]
    known = MAKERS.get(klass)
    if known is not None:
        return known
    check_plain(klass)
    init = getattr(klass.__init__, "__code__", None)
    if init is None or not init.co_filename.startswith("<attrs generated") or "__new__" in vars(klass):
        raise TypeError(
            f"{klass.__name__} builds itself with an __init__ or __new__ of its own, which a maker would skip"
        )
    if not all(field.kw_only for field in attrs.fields(klass)):
        raise TypeError(f"{klass.__name__}: a maker takes keywords only, as the class must")
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": klass}
    parameters: list[str] = []
    body: list[str] = []
    for field in attrs.fields(klass):
        check_slot(klass, field.name)
        if field.alias.startswith("_"):
            # The generated function's own names start with "_"; a parameter must never be one.
            raise TypeError(f"{klass.__name__}.{field.name}: a keyword starting with '_' is not supported")
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if default.takes_self:
                raise TypeError(f"{klass.__name__}.{field.name}: a factory that takes self is not supported")
            namespace[f"_factory_{field.name}"] = default.factory
            value = f"_factory_{field.name}()"
            if field.init:
                namespace["_NOTHING"] = attrs.NOTHING
                parameters.append(f"{field.alias}=_NOTHING")
                value = f"_factory_{field.name}() if {field.alias} is _NOTHING else {field.alias}"
        elif not field.init:
            if default is attrs.NOTHING:
                raise TypeError(f"{klass.__name__}.{field.name} is not set by __init__ and has no default")
            namespace[f"_default_{field.name}"] = default
            value = f"_default_{field.name}"
        else:
            if default is attrs.NOTHING:
                parameters.append(field.alias)
            else:
                namespace[f"_default_{field.name}"] = default
                parameters.append(f"{field.alias}=_default_{field.name}")
            value = field.alias
        body.append(f"    _o.{field.name} = {value}")
    namespace["_Builder"] = builder_class(klass)  # once the class is known to be one a maker builds
    name = f"make_{klass.__name__}"
    source = [
        f"def {name}(*, {', '.join(parameters)}):" if parameters else f"def {name}():",
        "    _o = _new(_Builder)",
        *body,
        "    _o.__class__ = _cls",
        "    return _o",
    ]
    exec(compile("\n".join(source), f"<agui_core {name}>", "exec"), namespace)
    made: Callable[P, T] = namespace[name]
    made.__doc__ = f"A {klass.__qualname__} object, built as {klass.__qualname__}(...) builds it, faster."
    made.__annotations__ = {**klass.__init__.__annotations__, "return": klass.__qualname__}
    MAKERS[klass] = made
    return made
