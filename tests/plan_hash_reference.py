#!/usr/bin/env python3
"""An independent reference for plan hash v1 (solver/plan_encoding.h), written from the
documented layout only. It prints the golden hashes that tests/plan_hash_test.cc asserts and
fails if they differ from the values given on the command line (the test passes them)."""
import struct
import sys

MASK = (1 << 64) - 1


def fmix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    x ^= x >> 33
    return x


def encode(ranks, experts, slots, replicas, routes):
    data = b"TOPOEPPL" + struct.pack("<IIII", 1, ranks, experts, slots)
    data += b"".join(struct.pack("<i", expert) for expert in replicas)
    data += struct.pack("<Q", len(routes))
    for src, expert, dst, tokens in routes:
        data += struct.pack("<iiiq", src, expert, dst, tokens)
    return data


def plan_hash(data):
    padded = data + b"\0" * (-len(data) % 8)
    total = 0
    for index in range(len(padded) // 8):
        (word,) = struct.unpack_from("<Q", padded, 8 * index)
        total = (total + fmix64(word ^ fmix64((index + 0x9E3779B97F4A7C15) & MASK))) & MASK
    return fmix64(total ^ fmix64(len(data)))


# The two plans of tests/plan_hash_test.cc (tiny_plan and plan_fixtures.h's small_balanced_plan).
CASES = {
    "tiny": encode(2, 2, 1, [-1, 0], [(0, 0, 1, 3)]),
    "small_balanced": encode(
        4, 8, 1, [-1, -1, 0, -1],
        [(0, 0, 0, 10), (0, 5, 2, 1), (1, 0, 0, 10), (1, 5, 2, 2),
         (2, 0, 2, 10), (2, 5, 2, 3), (3, 0, 2, 10), (3, 5, 2, 4)]),
}

if __name__ == "__main__":
    expected = dict(arg.split("=") for arg in sys.argv[1:])
    failed = False
    for name, data in CASES.items():
        got = "0x%016x" % plan_hash(data)
        print(name, len(data), "bytes", got)
        if name in expected and expected[name] != got:
            print("  MISMATCH: the C++ test asserts", expected[name])
            failed = True
    sys.exit(1 if failed else 0)
