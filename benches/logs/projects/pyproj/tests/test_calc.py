"""The Python suite whose pytest runs the corpus records (some fail on purpose)."""
import json

import pytest


def parse_price(text):
    value = float(text.strip().lstrip("$"))
    if value < 0:
        raise ValueError(f"negative price: {text!r}")
    return round(value, 2)


@pytest.mark.parametrize("text,expected", [(f"${i}.50", i + 0.5) for i in range(30)])
def test_parse_price(text, expected):
    assert parse_price(text) == expected


def test_rounding():
    assert parse_price("1.005") == 1.01  # fails: binary floating point


def test_negative():
    with pytest.raises(ValueError):
        parse_price("-3")


def test_config_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"currency": "EUR"}')
    assert json.loads(path.read_text())["currency"] == "USD"


def test_blank():
    assert parse_price("  ") == 0  # fails: ValueError raised


class TestTotals:
    def test_sum(self):
        assert sum(parse_price(p) for p in ["1", "2", "3"]) == 6

    def test_empty(self):
        assert sum([]) == 0
