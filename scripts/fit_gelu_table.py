#!/usr/bin/python3
"""Fits the piecewise polynomial table of vmath::vgelu (kernels/vector_math_inl.h) and prints it.

GELU(y) = max(y, 0) - g(|y|) with g(a) = a * Phi(-a) = a * erfc(a / sqrt2) / 2 (a >= 0), which is
smooth, at most 0.17 and below 2e-8 past a = 5.8. g is fitted on 16 intervals centred on
i * 0.375 (i = 0..15) by a degree-5 polynomial in u = a - 0.375 i, near-minimax in absolute error
over |u| <= 0.1875 (widened 2% for the rounding of the index), interval 0 with no constant term
so that GELU(0) is exactly 0. The script then evaluates the kernel's float32 steps (fma emulated
in double) over [-12, 12] and prints the worst |error| / max(1, |GELU|) against double math.

Run: /usr/bin/python3 scripts/fit_gelu_table.py   (numpy only)
"""
import math

import numpy as np

INTERVALS, WIDTH, DEGREE, CLAMP = 16, 0.375, 5, 5.8
erfc = np.vectorize(math.erfc)


def g(a):
    return a * 0.5 * erfc(a / math.sqrt(2.0))


def fit():
    nodes = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    table = np.zeros((INTERVALS, DEGREE + 1))
    for i in range(INTERVALS):
        u = WIDTH / 2 * 1.02 * nodes
        y = g(i * WIDTH + u)
        first = 1 if i == 0 else 0  # interval 0: no constant term
        basis = np.vander(u, DEGREE + 1, increasing=True)[:, first:]
        weight = np.ones_like(u)
        for _ in range(40):  # reweighted least squares towards the minimax fit
            sol = np.linalg.lstsq(basis * np.sqrt(weight)[:, None], y * np.sqrt(weight), rcond=None)[0]
            error = np.abs(basis @ sol - y)
            weight = weight * (error / error.max() + 1e-3)
            weight /= weight.mean()
        table[i, first:] = sol
    return table.astype(np.float32)


def fma(a, b, c):
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


def kernel(y, table):
    """The float32 steps of vgelu."""
    y = np.float32(y)
    a = np.minimum(np.abs(y), np.float32(CLAMP))
    shifter = np.float32(12582912.0)
    z = fma(a, np.float32(1.0 / WIDTH), shifter)
    m = np.float32(z - shifter)
    i = m.astype(np.int64) & (INTERVALS - 1)
    u = fma(m, np.float32(-WIDTH), a)
    p = table[i, DEGREE]
    for j in range(DEGREE - 1, -1, -1):
        p = fma(p, u, table[i, j])
    return np.float32(np.maximum(np.float32(0), y) - p)


def hex_float(v):
    """C++ hex float literal of a float32 value, trailing zero digits dropped."""
    mantissa, exponent = float(v).hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}f"


def main():
    table = fit()
    rng = np.random.default_rng(1)
    ys = np.concatenate([np.arange(-12, 12, 0.0001).astype(np.float32),
                         rng.uniform(-8, 8, 1000000).astype(np.float32)])
    exact = 0.5 * ys.astype(np.float64) * erfc(-ys.astype(np.float64) / math.sqrt(2.0))
    error = np.abs(kernel(ys, table).astype(np.float64) - exact) / np.maximum(1.0, np.abs(exact))
    print(f"// worst |error| / max(1, |GELU|) over [-12, 12]: {error.max():.3g} at {ys[error.argmax()]}")
    print(f"alignas(64) inline constexpr float kGeluTail[{DEGREE + 1}][{INTERVALS}] = {{")
    for j in range(DEGREE + 1):
        print("    {" + ", ".join(hex_float(v) for v in table[:, j]) + "},")
    print("};")


if __name__ == "__main__":
    main()
