#!/usr/bin/env python3
"""Where a pass's GPU time goes: sums the kernel durations of an `ncu --csv
--page raw --metrics gpu__time_duration.sum` log by kernel (name without its
argument list), largest first, with each one's launches and share.

Usage: python3 bench/gpu/ncu_sum.py NCU_CSV [TOP]   (markdown table on stdout)
"""
import csv
import sys
from collections import defaultdict


def rows(path):
    """(kernel, nanoseconds) per launch; ncu's csv has a units row and may
    begin with the program's own lines."""
    with open(path, errors="replace") as f:
        lines = f.readlines()
    start = next((i for i, l in enumerate(lines) if '"Kernel Name"' in l), None)
    if start is None:
        return
    for r in csv.DictReader(lines[start:]):
        v = r.get("gpu__time_duration.sum", "").replace(",", "")
        try:
            ns = float(v)
        except ValueError:
            continue  # the units row
        yield r["Kernel Name"].split("(")[0].strip(), ns


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25
    total, count = defaultdict(float), defaultdict(int)
    for name, ns in rows(path):
        total[name] += ns
        count[name] += 1
    all_ns = sum(total.values())
    if not all_ns:
        print(f"no kernel durations in {path}")
        return 1
    print(f"{sum(count.values())} launches, {all_ns / 1e6:.3f} ms of kernel time in all\n")
    print("| kernel | launches | ms | share |")
    print("| --- | ---: | ---: | ---: |")
    for name in sorted(total, key=total.get, reverse=True)[:top]:
        print(f"| `{name[:110]}` | {count[name]} | {total[name] / 1e6:.3f} | {100 * total[name] / all_ns:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
