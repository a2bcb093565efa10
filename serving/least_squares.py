"""Bounded nonlinear least squares (Levenberg-Marquardt) for the latency model's few factors.

Why our own: the fit has a handful of parameters and a hundred-odd residuals, each the log ratio of a prediction
to a measured figure over the figure's error; numpy and scipy are not runtime requirements of this project, and
a Levenberg-Marquardt step on a 10 x 10 system is a few lines. ``residuals`` maps a parameter vector to the
residual vector; ``depends`` says which residuals a parameter can move (a GPU factor never moves a TPU figure),
so the finite-difference Jacobian recomputes only those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Vector = list[float]


@dataclass(frozen=True)
class Parameter:
    """One fitted number: its name, its bounds, and the step its finite difference takes."""

    name: str
    low: float
    high: float
    step: float

    def clamp(self, value: float) -> float:
        return min(max(value, self.low), self.high)


def _solve(matrix: list[Vector], vector: Vector) -> Vector:
    """Gaussian elimination with partial pivoting (the normal equations are small and damped: well posed)."""
    n = len(vector)
    rows = [[*matrix[i], vector[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        if abs(rows[col][col]) < 1e-300:
            continue
        for r in range(col + 1, n):
            factor = rows[r][col] / rows[col][col]
            for c in range(col, n + 1):
                rows[r][c] -= factor * rows[col][c]
    solution = [0.0] * n
    for r in range(n - 1, -1, -1):
        if abs(rows[r][r]) < 1e-300:
            continue
        solution[r] = (rows[r][n] - sum(rows[r][c] * solution[c] for c in range(r + 1, n))) / rows[r][r]
    return solution


def _cost(values: Vector) -> float:
    return sum(v * v for v in values)


def fit(
    residuals: Callable[[Vector], Vector],
    start: Vector,
    parameters: Sequence[Parameter],
    *,
    depends: Sequence[Sequence[int]] | None = None,
    iterations: int = 30,
) -> Vector:
    """The parameter vector within the bounds that minimises the sum of squared residuals, from ``start``."""
    x = [p.clamp(v) for p, v in zip(parameters, start, strict=True)]
    r = residuals(x)
    cost = _cost(r)
    damping = 1e-2
    for _ in range(iterations):
        jacobian: list[Vector] = []  # one column per parameter
        for j, parameter in enumerate(parameters):
            step = parameter.step if x[j] + parameter.step <= parameter.high else -parameter.step
            moved = list(x)
            moved[j] = x[j] + step
            shifted = residuals(moved)
            rows = range(len(r)) if depends is None else depends[j]
            column = [0.0] * len(r)
            for i in rows:
                column[i] = (shifted[i] - r[i]) / step
            jacobian.append(column)
        n = len(parameters)
        normal = [
            [sum(a * b for a, b in zip(jacobian[i], jacobian[k], strict=True)) for k in range(n)] for i in range(n)
        ]
        gradient = [sum(a * b for a, b in zip(jacobian[i], r, strict=True)) for i in range(n)]
        improved = False
        for _attempt in range(8):
            damped = [
                [normal[i][k] + (damping * (normal[i][i] + 1e-12) if i == k else 0.0) for k in range(n)]
                for i in range(n)
            ]
            delta = _solve(damped, [-g for g in gradient])
            trial = [p.clamp(v + d) for p, v, d in zip(parameters, x, delta, strict=True)]
            trial_r = residuals(trial)
            trial_cost = _cost(trial_r)
            if trial_cost < cost:
                x, r, cost = trial, trial_r, trial_cost
                damping = max(damping / 3, 1e-6)
                improved = True
                break
            damping *= 4
        if not improved or all(abs(d) < 1e-4 * (abs(v) + p.step) for d, v, p in zip(delta, x, parameters, strict=True)):
            break
    return x
