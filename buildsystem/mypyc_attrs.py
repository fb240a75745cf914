"""A mypy plugin for the compiled build only: attrs fields are ``Any`` where mypyc would check them.

mypyc checks at run time every value it takes from an untyped source into a typed name, and
two places where attrs classes meet compiled code do not hold what their annotations say:

- In an attrs class body, ``limit: int | None = attrs.field(default=5)`` is typed by attrs'
  stubs as an ``int``, but what the body really holds until the decorator runs is attrs'
  field definition, so a compiled class body raises ``TypeError: int object expected``.
  The calls ``attrs.field``/``attr.ib`` are typed ``Any`` here, so mypyc stores them
  unchecked.
- attrs classes are not native classes (mypyc compiles ``@attrs.frozen`` classes as ordinary
  Python classes), so a compiled read of one of their fields is a Python attribute read
  followed by a check of the annotation. The wire types do not check what they are given
  (a decoder validates before it builds them), and code that judges a value (the ordering
  rules, the answer checks) is handed objects built with ``None`` where a ``str`` belongs: it
  must refuse them, as the pure-Python package does, not die on a ``TypeError``. Reads of attrs
  fields are typed ``Any`` here, so they are taken as they are.

mypy strict on the package (tests/test_lint.py) runs without this plugin: it changes nothing a
type checker should see, only what mypyc generates (buildsystem/agui_build.py passes it).
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.nodes import TypeInfo
from mypy.plugin import AttributeContext, FunctionContext, Plugin
from mypy.types import AnyType, Type, TypeOfAny

__all__ = ["plugin"]

_FIELD_FUNCTIONS = frozenset({"attrs.field", "attr.field", "attr.ib", "attr.attrib", "attr.attr"})


def _untyped(ctx: FunctionContext) -> Type:
    return AnyType(TypeOfAny.special_form)


def _read_untyped(ctx: AttributeContext) -> Type:
    return ctx.default_attr_type if ctx.is_lvalue else AnyType(TypeOfAny.special_form)


def _is_attrs_field(info: TypeInfo, name: str) -> bool:
    for klass in info.mro:
        fields = klass.metadata.get("attrs", {}).get("attributes", ())
        if any(field.get("name") == name for field in fields):
            return True
    return False


class _AttrsFieldsAsAny(Plugin):
    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return _untyped if fullname in _FIELD_FUNCTIONS else None

    def get_attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        owner, _, name = fullname.rpartition(".")
        found = self.lookup_fully_qualified(owner)
        if found is None or not isinstance(found.node, TypeInfo):
            return None
        return _read_untyped if _is_attrs_field(found.node, name) else None


def plugin(version: str) -> type[Plugin]:
    return _AttrsFieldsAsAny
