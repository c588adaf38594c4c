"""Every operator of the expression language, evaluated against a scope."""
import pytest

from potsherd.core.errors import FormatError, ValueFormatError
from potsherd.core.expr import Scope, compile_expr, linear_count, references
from potsherd.core.values import RawString


def ev(expr, frame=None, params=None):
    s = Scope(dict(params or {}))
    s.push(dict(frame or {}))
    return compile_expr(expr)(s)


@pytest.mark.parametrize("expr,frame,expected", [
    ({"gt": ["a", 1]}, {"a": 2}, 1),
    ({"gt": ["a", 2]}, {"a": 2}, 0),
    ({"eq": ["a", 2]}, {"a": 2}, 1),
    ({"and": [{"gt": ["a", 0]}, {"eq": ["b", 3]}]}, {"a": 1, "b": 3}, 1),
    ({"and": [{"gt": ["a", 0]}, {"eq": ["b", 3]}]}, {"a": 1, "b": 4}, 0),
    ({"or": [{"eq": ["a", 9]}, {"eq": ["b", 3]}]}, {"a": 1, "b": 3}, 1),
    ({"or": [{"eq": ["a", 9]}, {"eq": ["b", 9]}]}, {"a": 1, "b": 3}, 0),
    ({"minus": [1264, 1]}, {}, 1263),
    ({"minus": ["a", "b"]}, {"a": 1, "b": 3}, -2),
    ({"mask": ["t", 65535]}, {"t": 0x10006}, 6),
    ({"length": "s"}, {"s": RawString(b"abc")}, 3),
    ({"select": ["k", 3, 4]}, {"k": 0}, 3),
    ({"select": ["k", 3, 4]}, {"k": 1}, 4),
    ({"select": ["k", 3, 4]}, {"k": 2}, None),
    ({"product": ["n", 8]}, {"n": 5}, 40),
    ({"product": [{"divide": [{"minus": ["m", 1]}, 8]}, {"divide": [{"minus": ["m", 1]}, 8]}]}, {"m": 129}, 256),
    ({"divide": [7, 2]}, {}, 3),
    ({"divide": [-7, 2]}, {}, -3),  # C truncation toward zero
    ({"divide": [{"float": "w"}, 16]}, {"w": 33.0}, 3),  # float operand: round up
    ({"divide": [{"float": "w"}, 16]}, {"w": 512.0}, 32),
    ({"float": "w"}, {"w": 2}, 2.0),
    ({"choose": [{"gt": ["v", 0]}, 16, 8]}, {"v": 1}, 16),
    ({"choose": [{"gt": ["v", 0]}, 16, 8]}, {"v": 0}, 8),
    ({"ge": ["a", 2]}, {"a": 2}, 1),
    ({"lt": ["a", 2]}, {"a": 2}, 0),
    ({"ne": ["a", 2]}, {"a": 3}, 1),
    ({"not": [{"eq": ["a", 2]}]}, {"a": 3}, 1),
    ({"plus": ["a", 2, 3]}, {"a": 1}, 6),
    ({"present": "a"}, {"a": 0}, 1),
    ({"present": "zz"}, {"a": 0}, 0),
    ({"min": ["a", 5]}, {"a": 9}, 5),
    ({"max": ["a", 5]}, {"a": 9}, 9),
])
def test_operator(expr, frame, expected):
    assert ev(expr, frame) == expected


def test_names_resolve_inner_then_outer_then_parameters():
    s = Scope({"p": 100, "x": -1})
    s.push({"x": 1, "y": 2})
    s.push({"x": 10})
    assert compile_expr("x")(s) == 10
    assert compile_expr("y")(s) == 2
    assert compile_expr("p")(s) == 100


def test_and_short_circuits_before_an_absent_field():
    assert ev({"and": [{"gt": ["v", 1263]}, {"gt": ["absent", 0]}]}, {"v": 0}) == 0
    with pytest.raises(FormatError):
        ev({"gt": ["absent", 0]}, {})


def test_division_by_zero_is_a_format_error():
    with pytest.raises(ValueFormatError):
        ev({"divide": ["a", "b"]}, {"a": 1, "b": 0})
    with pytest.raises(ValueFormatError):
        ev({"divide": [{"float": "a"}, 1]}, {"a": float("nan")})


def test_remaining_is_bytes_left_when_decoding_and_presence_when_encoding():
    from potsherd.core.stream import Reader
    s = Scope({}, Reader(b"abcdef", 2))
    assert compile_expr({"remaining": []})(s) == 4
    s = Scope({})
    s.present = True
    assert compile_expr({"remaining": []})(s) == 1


def test_unknown_operator_is_rejected_when_compiling():
    with pytest.raises(ValueError):
        compile_expr({"pow": [1, 2]})


def test_static_analysis_helpers():
    assert references({"and": [{"gt": ["a", 0]}, {"eq": ["b", "c"]}]}) == {"a", "b", "c"}
    assert linear_count("n") == ("n", 1)
    assert linear_count({"product": ["n", 6]}) == ("n", 6)
    assert linear_count({"product": ["n", "n"]}) is None
