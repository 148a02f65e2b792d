"""The reply types of cowfs/types.py as a schema, for the contract test.

The schema is read from the dataclasses themselves (their type hints): a
field that is ``Optional`` may be left out, every other field must be sent;
``str`` and Literal are "string", ``int`` "number", ``bool`` "boolean",
lists "array", dicts "map". It has the shape of the TypeScript client's
test/wire-schema.ts, so the two can be compared (a marker's ``replaces``,
which holds markers, is ``{"cycle": true}`` in both dumps).
"""

from typing import Any, Dict, List, Literal, Optional, Union, get_args, get_origin

from cowfs.types import REPLY_TYPES, ErrorBody
from cowfs.wire import WireObject, field_types


def _optional(tp: Any) -> Any:
    """The type inside Optional[...], or None if tp is not optional."""
    if get_origin(tp) is Union and type(None) in get_args(tp):
        rest = [a for a in get_args(tp) if a is not type(None)]
        return rest[0] if len(rest) == 1 else Union[tuple(rest)]
    return None


def kind(tp: Any) -> Any:
    """The schema node of a (non-optional) type, without recursing into objects."""
    origin = get_origin(tp)
    if origin is Literal:
        return kind(type(get_args(tp)[0]))
    if tp is str:
        return "string"
    if tp is bool:
        return "boolean"
    if tp in (int, float):
        return "number"
    if origin is list:
        return "array"
    if origin is dict:
        return "map"
    if isinstance(tp, type) and issubclass(tp, WireObject):
        return "object"
    raise TypeError(f"no schema for {tp!r}")


def dump(tp: Any, stack: Optional[List[type]] = None) -> Any:
    """The schema of tp as JSON data, in the TypeScript dump's form."""
    stack = stack or []
    k = kind(tp)
    if k == "array":
        return {"array": dump(get_args(tp)[0], stack)}
    if k == "map":
        return {"map": dump(get_args(tp)[1], stack)}
    if k != "object":
        return k
    if tp in stack:
        return {"cycle": True}
    out: Dict[str, Any] = {}
    for name, ftp in field_types(tp).items():
        inner = _optional(ftp)
        out[name] = {"optional": dump(inner, stack + [tp])} if inner is not None else dump(ftp, stack + [tp])
    return {"object": out}


def schemas() -> Dict[str, Any]:
    """Every reply's schema, by the name of its type (as the TypeScript schema names them)."""
    out = {name: dump(tp) for name, tp in REPLY_TYPES.items() if tp is not ErrorBody}
    out["ErrorReply"] = {"object": {"error": dump(ErrorBody)}}
    return out


def mismatches(value: Any, tp: Any, at: str) -> List[str]:
    """What differs between a reply and its type, one line per difference, each naming its place."""
    out: List[str] = []
    _walk(value, tp, at, out)
    return out


def _walk(v: Any, tp: Any, at: str, out: List[str]) -> None:
    k = kind(tp)
    if k == "string":
        if not isinstance(v, str):
            out.append(f"{at}: a {type(v).__name__}, the types say str")
    elif k == "boolean":
        if not isinstance(v, bool):
            out.append(f"{at}: a {type(v).__name__}, the types say bool")
    elif k == "number":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            out.append(f"{at}: a {type(v).__name__}, the types say a number")
    elif k == "array":
        if not isinstance(v, list):
            out.append(f"{at}: not an array")
            return
        for i, x in enumerate(v):
            _walk(x, get_args(tp)[0], f"{at}[{i}]", out)
    elif k == "map":
        if not isinstance(v, dict):
            out.append(f"{at}: not an object")
            return
        for key, x in v.items():
            _walk(x, get_args(tp)[1], f"{at}.{key}", out)
    else:
        if not isinstance(v, dict):
            out.append(f"{at}: not an object")
            return
        fields = field_types(tp)
        for key, x in v.items():
            if key not in fields:
                out.append(f"{at}.{key}: sent by the server, not declared in the types")
                continue
            ftp = fields[key]
            _walk(x, _optional(ftp) or ftp, f"{at}.{key}", out)
        for key, ftp in fields.items():
            if _optional(ftp) is None and key not in v:
                out.append(f"{at}.{key}: declared required in the types, not sent by the server")


def check_reply(name: str, value: Any) -> List[str]:
    """mismatches for a reply of the type named name (ErrorReply: {"error": ErrorBody})."""
    if name == "ErrorReply":
        if not isinstance(value, dict) or set(value) != {"error"}:
            return [f"{name}: not {{\"error\": ...}}: {value!r}"]
        return mismatches(value["error"], ErrorBody, f"{name}.error")
    return mismatches(value, REPLY_TYPES[name], name)

