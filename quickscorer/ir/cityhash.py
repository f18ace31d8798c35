"""CityHash64 as CatBoost's sources carry it, and the 32-bit category hash CatBoost names
categorical values by: what a CatBoost model's one-hot splits and CTR tables are keyed with
(checked against CatBoost's own hashes in tests/test_catboost_import.py)."""
from __future__ import annotations

_M64 = (1 << 64) - 1
_K0, _K1, _K2, _K3 = (0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F,
                      0xC949D7C7509E6557)
_KMUL = 0x9DDFEA08EB382D69


def _rot(v: int, s: int) -> int:
    return v if s == 0 else ((v >> s) | (v << (64 - s))) & _M64


def _mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash16(u: int, v: int) -> int:
    a = _mix(((u ^ v) * _KMUL) & _M64)
    b = _mix(((v ^ a) * _KMUL) & _M64)
    return (b * _KMUL) & _M64


def _weak32(w: int, x: int, y: int, z: int, a: int, b: int) -> tuple[int, int]:
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def city_hash64(data: bytes) -> int:
    """CityHash64 (version 1, as CatBoost's util/digest/city.cpp has it) of ``data``."""
    n = len(data)

    def u64(i: int) -> int:
        return int.from_bytes(data[i:i + 8], "little")

    def u32(i: int) -> int:
        return int.from_bytes(data[i:i + 4], "little")

    if n <= 16:
        if n > 8:
            a, b = u64(0), u64(n - 8)
            return _hash16(a, _rot((b + n) & _M64, n)) ^ b
        if n >= 4:
            return _hash16((n + (u32(0) << 3)) & _M64, u32(n - 4))
        if n:
            y = data[0] + (data[n >> 1] << 8)
            z = n + (data[n - 1] << 2)
            return (_mix(((y * _K2) ^ (z * _K3)) & _M64) * _K2) & _M64
        return _K2
    if n <= 32:
        a = (u64(0) * _K1) & _M64
        b = u64(8)
        c = (u64(n - 8) * _K2) & _M64
        d = (u64(n - 16) * _K0) & _M64
        return _hash16((_rot((a - b) & _M64, 43) + _rot(c, 30) + d) & _M64,
                       (a + _rot(b ^ _K3, 20) - c + n) & _M64)
    if n <= 64:
        z = u64(24)
        a = (u64(0) + (n + u64(n - 16)) * _K0) & _M64
        b = _rot((a + z) & _M64, 52)
        c = _rot(a, 37)
        a = (a + u64(8)) & _M64
        c = (c + _rot(a, 7)) & _M64
        a = (a + u64(16)) & _M64
        vf, vs = (a + z) & _M64, (b + _rot(a, 31) + c) & _M64
        a = (u64(16) + u64(n - 32)) & _M64
        z = u64(n - 8)
        b = _rot((a + z) & _M64, 52)
        c = _rot(a, 37)
        a = (a + u64(n - 24)) & _M64
        c = (c + _rot(a, 7)) & _M64
        a = (a + u64(n - 16)) & _M64
        wf, ws = (a + z) & _M64, (b + _rot(a, 31) + c) & _M64
        r = _mix(((vf + ws) * _K2 + (wf + vs) * _K0) & _M64)
        return (_mix((r * _K0 + vs) & _M64) * _K2) & _M64
    x = u64(0)
    y = u64(n - 16) ^ _K1
    z = u64(n - 56) ^ _K0
    v = _weak32(u64(n - 64), u64(n - 56), u64(n - 48), u64(n - 40), n, y)
    w = _weak32(u64(n - 32), u64(n - 24), u64(n - 16), u64(n - 8), (n * _K1) & _M64, _K0)
    z = (z + _mix(v[1]) * _K1) & _M64
    x = (_rot((z + x) & _M64, 39) * _K1) & _M64
    y = (_rot(y, 33) * _K1) & _M64
    s, left = 0, (n - 1) & ~63
    while True:
        x = (_rot((x + y + v[0] + u64(s + 16)) & _M64, 37) * _K1) & _M64
        y = (_rot((y + v[1] + u64(s + 48)) & _M64, 42) * _K1) & _M64
        x ^= w[1]
        y ^= v[0]
        z = _rot(z ^ w[0], 33)
        v = _weak32(u64(s), u64(s + 8), u64(s + 16), u64(s + 24), (v[1] * _K1) & _M64,
                    (x + w[0]) & _M64)
        w = _weak32(u64(s + 32), u64(s + 40), u64(s + 48), u64(s + 56), (z + w[1]) & _M64, y)
        z, x = x, z
        s += 64
        left -= 64
        if not left:
            break
    return _hash16((_hash16(v[0], w[0]) + _mix(y) * _K1 + z) & _M64,
                   (_hash16(v[1], w[1]) + x) & _M64)


def category_hash(text: str) -> int:
    """The 32-bit hash CatBoost names a category by: the low half of the CityHash64 of its
    UTF-8 text."""
    return city_hash64(text.encode("utf-8")) & 0xFFFFFFFF
