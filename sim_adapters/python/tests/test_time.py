"""Simulated time as int nanoseconds, and rounding to the grid (time.hpp)."""

from fractions import Fraction

import pytest

import simsync
from simsync import Rounding

MS = simsync.ms(1)


def test_helpers_are_exact_ints():
    assert simsync.seconds(1) == 1_000_000_000
    assert simsync.seconds(Fraction(1, 30)) == 33_333_333
    assert simsync.seconds(0.5) == 500_000_000
    assert simsync.ms(1) == 1_000_000 and simsync.us(3) == 3_000
    assert isinstance(simsync.seconds(1.25), int)
    assert simsync.to_seconds(1_500_000_000) == 1.5
    # A 1 ms step added a million times is exactly 1000 s: ints, no float inside.
    assert sum(simsync.ms(1) for _ in range(1_000_000)) == simsync.seconds(1000)


@pytest.mark.parametrize("bad", ["1", None, float("nan"), float("inf"), True])
def test_helpers_refuse_non_numbers(bad):
    with pytest.raises(simsync.InvalidArgument, match="seconds"):
        simsync.seconds(bad)


def test_camera_at_30_hz_on_a_1_ms_grid():
    # The design, section 1 (time): requests at n/30 s are granted at 0, 33, 67, 100, 133, 167, 200 ms.
    granted = [simsync.round_to_grid(simsync.seconds(Fraction(n, 30)), MS) // MS for n in range(7)]
    assert granted == [0, 33, 67, 100, 133, 167, 200]


@pytest.mark.parametrize(
    "t_us, rounding, expected_us",
    [
        (33_333, Rounding.nearest, 33_000),
        (66_667, Rounding.nearest, 67_000),
        (500, Rounding.nearest, 1_000),  # a tie goes up
        (-500, Rounding.nearest, 0),
        (-600, Rounding.nearest, -1_000),
        (33_333, Rounding.up, 34_000),
        (33_999, Rounding.down, 33_000),
        (34_000, Rounding.up, 34_000),
    ],
)
def test_round_to_grid_table(t_us, rounding, expected_us):
    assert simsync.round_to_grid(simsync.us(t_us), MS, rounding) == simsync.us(expected_us)


def test_sentinels_round_to_themselves():
    assert simsync.round_to_grid(simsync.NEVER, MS) == simsync.NEVER
    assert simsync.round_to_grid(simsync.BEFORE_EVERYTHING, MS) == simsync.BEFORE_EVERYTHING


def test_bad_time_arguments_name_the_field():
    with pytest.raises(simsync.InvalidArgument, match="step must be > 0"):
        simsync.round_to_grid(0, 0)
    with pytest.raises(simsync.InvalidArgument, match="^t must be an int"):
        simsync.round_to_grid(0.5, MS)
    with pytest.raises(simsync.InvalidArgument, match="out of range"):
        simsync.round_to_grid(2**63, MS)


def test_next_instant_after_and_format():
    assert simsync.next_instant_after(simsync.ms(30), simsync.ms(10), simsync.ms(30)) == simsync.ms(60)
    assert simsync.format_seconds(simsync.ms(1033)) == "1.033000000"
