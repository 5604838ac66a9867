"""The projects the SWE builder tests build from: a tiny library written here, and one pinned PyPI sdist."""

from __future__ import annotations

from pathlib import Path

import git

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

UNITS = '''\
"""Temperatures, percentages and grades; its tests check them in unittest subTests only."""


def to_fahrenheit(c):
    return c * 9 / 5 + 32


def to_celsius(f):
    return (f - 32) * 5 / 9


def clamp_percent(x):
    if x < 0:
        return 0
    if x > 100:
        return 100
    return x


def grade(score):
    if score >= 90:
        return "A"
    if score >= 50:
        return "pass"
    return "fail"
'''

TEST_UNITS = '''\
import unittest

from units import clamp_percent, grade, to_celsius, to_fahrenheit


class TestTemperatures(unittest.TestCase):
    def test_fahrenheit(self):
        for c, f in ((0, 32), (100, 212), (-40, -40)):
            with self.subTest(c=c):
                self.assertEqual(to_fahrenheit(c), f)

    def test_round_trip(self):
        for c in (-40, 0, 37, 100):
            with self.subTest(c=c):
                self.assertAlmostEqual(to_celsius(to_fahrenheit(c)), c)


class TestPercent(unittest.TestCase):
    def test_clamp(self):
        for x, want in ((-5, 0), (50, 50), (150, 100)):
            with self.subTest(x=x):
                self.assertEqual(clamp_percent(x), want)


class TestGrade(unittest.TestCase):
    def test_grades(self):
        for score, want in ((95, "A"), (70, "pass"), (10, "fail")):
            with self.subTest(score=score):
                self.assertEqual(grade(score), want)

    def test_known_bug_at_base(self):
        for score, want in ((90, "A"), (50, "pass"), (49.5, "pass")):
            with self.subTest(score=score):
                self.assertEqual(grade(score), want)
'''
UNITS_FILES = {"units.py": UNITS, "tests/test_units.py": TEST_UNITS}
"""Every assertion sits in a subTest; `test_known_bug_at_base` fails one subtest on the pristine tree."""

GREET_FILES = {
    "src/greet/__init__.py": '''\
"""Greetings in plain ASCII, through a third-party transliterator (a --deps package)."""

from text_unidecode import unidecode


def hello(name):
    return "hello " + unidecode(name)


def initials(name, limit=2):
    parts = unidecode(name).split()
    return "".join(p[0] for p in parts[:limit]).upper()
''',
    "src/greet/__main__.py": "import sys\n\nfrom greet import initials\n\nprint(initials(sys.argv[1]))\n",
    "tests/test_greet.py": '''\
import subprocess
import sys

from greet import hello, initials


def test_hello():
    assert hello("Zo\\u00eb") == "hello Zoe"


def test_initials():
    assert initials("\\u00c9mile Zola") == "EZ"
    assert initials("ada king lovelace") == "AK"


def test_command_line():
    done = subprocess.run([sys.executable, "-m", "greet", "\\u00c9mile Zola"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "EZ"
''',
}
"""A src layout whose command-line test imports the package and its --deps package in a subprocess."""
GREET_DEPS = ["text-unidecode==1.3"]


def write_tree(path: Path, files: dict[str, str]) -> Path:
    """`files` (relative path -> text) written under path."""
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    return path


def make_repo(path: Path, files: dict[str, str]) -> git.Repo:
    """A git repo holding `files` (relative path -> text), committed once."""
    write_tree(path, files)
    repo = git.Repo.init(path, initial_branch="main")
    repo.git.add(A=True)
    repo.index.commit("project with tests", author=git.Actor("t", "t@t"), committer=git.Actor("t", "t@t"))
    return repo

SLOW_FILES = {
    "slow.py": '''\
"""One mutant of this makes the test sleep about 12 s: slow, not endless."""

import time


def wait_and_double(x):
    pause = 6.0 - 5.98
    time.sleep(pause)
    return round(x * 2 + pause)
''',
    "tests/test_slow.py": "from slow import wait_and_double\n\n\ndef test_double():\n"
                          "    assert wait_and_double(3) == 6\n",
}
SLOW_MUTANT_LINE = "    pause = 6.0 + 5.98"

STRICT_CONFTEST = '''\
def pytest_addoption(parser):
    parser.addoption("--calc-strict", action="store_true", help="run the strict checks")
'''
STRICT_TEST = '''\
from calc import clamp, describe, first_word, in_range, mean, scale, windows


def test_strict_everything(request):
    assert request.config.getoption("--calc-strict"), "run with --calc-strict"
    assert clamp(11, 0, 10) == 10 and clamp(-1, 0, 10) == 0 and clamp(4, 0, 10) == 4
    assert windows([1, 2, 3], 2) == [[1, 2], [2, 3]] and describe(5) == "5 is odd"
    assert scale([2], 3) == [6] and first_word("a b") == "a" and in_range(2, 1, 3) and mean([2, 4]) == 3
'''
STRICT_FILES = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "tests/conftest.py": STRICT_CONFTEST,
                "tests/test_strict.py": STRICT_TEST}
"""calc plus a test that passes only when pytest gets `--calc-strict` (an option its conftest adds)."""
