"""The projects the SWE builder tests build from: a tiny library written here, and one pinned PyPI sdist."""

from __future__ import annotations

from meta_agent.swe.taskset import DEFAULT_PROJECTS

INFLECTION = next(p for p in DEFAULT_PROJECTS if p.name == "inflection")

CALC = '''\
"""A small library with enough branches and arithmetic for every mutation operator."""


def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


def total(values):
    result = 0
    for v in values:
        result += v
    return result


def windows(items, size):
    return [items[i:i + size] for i in range(len(items) - size + 1)]


def is_even(n):
    return n % 2 == 0


def describe(n):
    label = "even" if is_even(n) else "odd"
    return "%d is %s" % (n, label)


def scale(values, factor):
    return [v * factor for v in values]


def first_word(text):
    words = text.split()
    if not words:
        return ""
    return words[0]


def in_range(x, low, high):
    return low <= x and x <= high


def divide(a, b):
    return a / b


def mean(values):
    return divide(total(values), len(values))
'''

TEST_CALC = '''\
from calc import clamp, describe, first_word, in_range, is_even, mean, scale, total, windows


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_low():
    assert clamp(-3, 0, 10) == 0


def test_clamp_high():
    assert clamp(12, 0, 10) == 10


def test_clamp_edges():
    assert clamp(0, 0, 10) == 0
    assert clamp(10, 0, 10) == 10


def test_total():
    assert total([1, 2, 3]) == 6


def test_total_empty():
    assert total([]) == 0


def test_windows():
    assert windows([1, 2, 3, 4], 2) == [[1, 2], [2, 3], [3, 4]]


def test_windows_whole():
    assert windows([1, 2], 2) == [[1, 2]]


def test_is_even():
    assert is_even(4)
    assert not is_even(7)


def test_describe():
    assert describe(3) == "3 is odd"
    assert describe(8) == "8 is even"


def test_scale():
    assert scale([1, 2], 3) == [3, 6]


def test_first_word():
    assert first_word("hello big world") == "hello"
    assert first_word("   ") == ""


def test_in_range():
    assert in_range(3, 1, 5)
    assert not in_range(7, 1, 5)
    assert not in_range(0, 1, 5)


def test_mean():
    assert mean([1, 2, 3]) == 2
'''
