"""Reading the API's JSON into the dataclasses of types.py, and back.

A reply type is a dataclass deriving from WireObject. from_wire reads a
decoded JSON object by the fields' type hints (Optional, List, Dict,
nested WireObjects; Literal and TurnRef values as sent), ignores fields
the class does not declare, keeping them in ``extra`` (the API may add
fields), and fills a required field the reply left out with its zero
value. to_wire writes the object back, leaving out absent optional fields
as the daemon does. A field whose JSON name is not a Python name (``from``)
is declared with wire_field.
"""

import dataclasses
from typing import Any, Dict, Literal, Type, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T", bound="WireObject")


def wire_field(name: str, **kw: Any) -> Any:
    """A field whose JSON name is not its Python name."""
    return dataclasses.field(metadata={"wire": name}, **kw)


class WireObject:
    """The base of every reply type: parsing from JSON and back."""

    @property
    def extra(self) -> Dict[str, Any]:
        """The fields of the reply this client does not declare (the API may add fields)."""
        return self.__dict__.get("_extra", {})

    @classmethod
    def from_wire(cls: Type[T], value: Any) -> T:
        """Parses a decoded JSON object; unknown fields go to ``extra``."""
        if not isinstance(value, dict):
            raise TypeError(f"{cls.__name__}: a {type(value).__name__}, not a JSON object")
        hints = _hints(cls)
        kwargs: Dict[str, Any] = {}
        known = set()
        for f in dataclasses.fields(cls):
            name = wire_name(f)
            known.add(name)
            tp = hints[f.name]
            if name in value:
                kwargs[f.name] = _parse(tp, value[name])
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                kwargs[f.name] = None if _optional(tp) else _zero(tp)
        obj = cls(**kwargs)  # type: ignore[call-arg]
        extra = {k: v for k, v in value.items() if k not in known}
        if extra:
            obj.__dict__["_extra"] = extra
        return obj

    def to_wire(self) -> Dict[str, Any]:
        """The JSON object: absent optional fields left out, unknown ones kept."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None:
                continue
            out[wire_name(f)] = _dump(v)
        out.update(self.extra)
        return out


def wire_name(f: "dataclasses.Field[Any]") -> str:
    """A field's JSON name."""
    return f.metadata.get("wire", f.name)


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    h = _HINTS.get(cls)
    if h is None:
        h = _HINTS[cls] = get_type_hints(cls)
    return h


def field_types(cls: type) -> Dict[str, Any]:
    """A reply type's fields by JSON name, with their type hints."""
    hints = _hints(cls)
    return {wire_name(f): hints[f.name] for f in dataclasses.fields(cls)}


def _optional(tp: Any) -> bool:
    return get_origin(tp) is Union and type(None) in get_args(tp)


def _zero(tp: Any) -> Any:
    origin = get_origin(tp)
    if origin is list:
        return []
    if origin is dict:
        return {}
    if origin is Literal:
        return type(get_args(tp)[0])()
    if isinstance(tp, type) and issubclass(tp, WireObject):
        return tp.from_wire({})
    if tp in (int, str, bool, float):
        return tp()
    return None


def _parse(tp: Any, v: Any) -> Any:
    if v is None:
        return None
    origin = get_origin(tp)
    if origin is Union:
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _parse(args[0], v)
        return v  # TurnRef and the like: as sent
    if origin is list:
        (elem,) = get_args(tp)
        return [_parse(elem, x) for x in v] if isinstance(v, list) else v
    if origin is dict:
        _, val = get_args(tp)
        return {k: _parse(val, x) for k, x in v.items()} if isinstance(v, dict) else v
    if isinstance(tp, type) and issubclass(tp, WireObject):
        return tp.from_wire(v)
    return v


def _dump(v: Any) -> Any:
    if isinstance(v, WireObject):
        return v.to_wire()
    if isinstance(v, list):
        return [_dump(x) for x in v]
    if isinstance(v, dict):
        return {k: _dump(x) for k, x in v.items()}
    return v
