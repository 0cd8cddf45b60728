"""Repeated load and simulate keep memory flat: 10^4 rounds of esi.load + Model.simulate (the
xarray dataset included) after a warm-up, resident memory measured before and after."""
import gc

from conftest import OZONE


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def round_trip(esi):
    ds = esi.load(OZONE).simulate((0, 3600), saveat=600)
    return float(ds["OzoneNOx_O3"].values[-1])


def test_ten_thousand_rounds_keep_memory_flat(esi):
    first = [round_trip(esi) for _ in range(500)]
    gc.collect()
    before = resident_bytes()
    for _ in range(10_000):
        assert round_trip(esi) == first[0]  # and every round the same bits
    gc.collect()
    grown = resident_bytes() - before
    # A leak of 200 bytes per round would show as 2 MB.
    assert grown < 2_000_000, f"resident memory grew by {grown / 1e6:.1f} MB over 10^4 rounds"
