"""agui_core.protocol.frozen: a maker builds exactly the object its class builds, or refuses the class."""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import pytest

import agui_core.machine.thread  # noqa: F401  (imports every module that makes makers)
from agui_core.machine.effects import Emit, make_emit
from agui_core.machine.record import ThreadRecord, make_thread_record
from agui_core.protocol.frozen import MAKERS, builder_class, maker


def _keywords(cls: type[Any], *, every: bool) -> dict[str, Any]:
    """A distinct object for each required argument of ``cls`` (each argument, if ``every``)."""
    return {
        field.alias: object() for field in attrs.fields(cls) if field.init and (every or field.default is attrs.NOTHING)
    }


def test_the_package_makes_makers_for_its_records_effects_and_events() -> None:
    names = {cls.__name__ for cls in MAKERS}
    assert {"ThreadRecord", "ActiveRun", "ResolvedInterrupt", "OpenInterrupt", "Emit", "Persist"} <= names
    assert {"RunStartedEvent", "RunFinishedEvent", "MessagesSnapshotEvent", "BoundAnswer"} <= names


@pytest.mark.parametrize("cls", sorted(MAKERS, key=lambda c: c.__qualname__), ids=lambda c: c.__qualname__)
def test_a_maker_takes_what_its_class_takes_and_builds_the_same_object(cls: type[Any]) -> None:
    made = MAKERS[cls]
    assert inspect.signature(made).parameters == inspect.signature(cls).parameters
    for every in (False, True):
        keywords = _keywords(cls, every=every)
        obj, expected = made(**keywords), cls(**keywords)
        assert type(obj) is cls
        assert obj == expected
        for field in attrs.fields(cls):
            mine, theirs = getattr(obj, field.name), getattr(expected, field.name)
            assert mine is theirs or (isinstance(field.default, attrs.Factory) and mine == theirs), field.name  # type: ignore[arg-type]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            obj.some_field = 1
    with pytest.raises(TypeError):
        made(**_keywords(cls, every=True), not_a_field=1)


def test_a_maker_is_made_once_per_class_and_its_objects_are_the_classs() -> None:
    assert maker(Emit) is make_emit
    record = make_thread_record(thread_id="t-1", messages=(), owner="alice")
    assert record == ThreadRecord(thread_id="t-1", messages=(), owner="alice")
    assert hash(record) == hash(ThreadRecord(thread_id="t-1", messages=(), owner="alice"))
    assert attrs.evolve(record, version=2).version == 2


def test_a_factory_default_gives_each_object_its_own_value() -> None:
    @attrs.frozen(kw_only=True)
    class Tally:
        name: str
        seen: list[str] = attrs.field(factory=list)
        hidden: int = attrs.field(default=7, init=False)

    make_tally = maker(Tally)
    try:
        first, second = make_tally(name="a"), make_tally(name="b")
        assert first.seen == [] and first.seen is not second.seen and first.hidden == 7
        given: list[str] = ["x"]
        assert make_tally(name="c", seen=given).seen is given
        assert make_tally(name="c") == Tally(name="c")
    finally:
        del MAKERS[Tally]


def test_a_field_may_be_named_as_the_generated_function_names_its_object() -> None:
    @attrs.frozen(kw_only=True)
    class Point:
        o: int
        _cls: int = 0

    try:
        assert maker(Point)(o=5, cls=6) == Point(o=5, cls=6)
    finally:
        del MAKERS[Point]


def test_the_builder_class_never_leaves_a_maker() -> None:
    builder = builder_class(Emit)
    assert type(make_emit(event=None)) is Emit  # type: ignore[arg-type]
    assert builder is not Emit and issubclass(builder, Emit)


NEEDS_ITS_INIT = (
    "validator",
    "converter",
    "pre_init",
    "post_init",
    "cached hash",
    "self factory",
    "positional",
    "no default",
    "own init",
    "own new",
    "underscore keyword",
)
"""The kinds of attrs class a builder that skips ``__init__`` would build wrongly."""


def needs_its_init(kind: str) -> type[Any]:
    """A frozen attrs class named ``Odd`` of one of :data:`NEEDS_ITS_INIT`."""
    if kind == "validator":

        @attrs.frozen(kw_only=True)
        class Odd:
            name: str = attrs.field(validator=attrs.validators.instance_of(str))

    elif kind == "converter":

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str = attrs.field(converter=str)

    elif kind == "pre_init":

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str

            def __attrs_pre_init__(self) -> None:
                pass

    elif kind == "post_init":

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str

            def __attrs_post_init__(self) -> None:
                pass

    elif kind == "cached hash":

        @attrs.frozen(kw_only=True, cache_hash=True)
        class Odd:  # type: ignore[no-redef]
            name: str

    elif kind == "self factory":

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str
            upper: str = attrs.field(default=attrs.Factory(lambda self: self.name.upper(), takes_self=True))

    elif kind == "positional":

        @attrs.frozen
        class Odd:  # type: ignore[no-redef]
            name: str

    elif kind == "no default":

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str
            later: str = attrs.field(init=False)

    elif kind == "own init":

        @attrs.frozen(kw_only=True, init=False)
        class Odd:  # type: ignore[no-redef]
            cents: int

            def __init__(self, *, cents: int) -> None:
                if cents < 0:
                    raise ValueError("no negative money")
                self.__attrs_init__(cents=cents)

    elif kind == "own new":

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str

            def __new__(cls, **kwargs: Any) -> Any:
                return super().__new__(cls)

    else:

        @attrs.frozen(kw_only=True)
        class Odd:  # type: ignore[no-redef]
            name: str = attrs.field(alias="_name")

    return Odd


@pytest.mark.parametrize("kind", NEEDS_ITS_INIT)
def test_a_class_that_needs_its_init_is_refused(kind: str) -> None:
    odd = needs_its_init(kind)
    with pytest.raises(TypeError, match="Odd"):
        maker(odd)
    assert odd not in MAKERS
