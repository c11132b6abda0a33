"""The verdict on a paper, and on a live experiment's model twin: one word for how much of it the
model reproduces, by a rule stated here before it was applied to any result, so that it cannot
have been chosen to make a result look better.

The rule reads a paper's *primary* claims only (each paper sentence once, under its primary
reading; alternative readings are reported apart and never decide a verdict), per role:

- C = calibration claims passed / calibration claims judged,
- P = prediction claims passed / prediction claims judged,

where *judged* counts the verdicts pass, fail and inconclusive (an inconclusive claim is judged and
did not pass) and leaves out the claims the model cannot test (not applicable). Then

- **reproduced**: C >= 100 % (every calibration claim passes) and P >= 80 %;
- **partly reproduced**: otherwise, C >= 50 % and P >= 50 %;
- **not reproduced**: otherwise (fewer than half of the calibration claims, or fewer than half of
  the predictions, pass).

Calibration comes first because predictions rest on it: a model whose baseline misses the paper's
does not reproduce the mechanism's effect, however many predictions pass. A paper without
calibration claims meets the calibration conditions (nothing was fitted, nothing to miss); one
without a judged prediction has no verdict ("not judged").

For a live experiment the same rule reads the twin's claims: its calibration claims against the
live baseline, its predictions against the live mechanism.

How much a verdict depends on where the thresholds sit is shown beside it: `sensitivity` gives
every row's verdict with each threshold moved by -10 % and +10 % of itself (the others kept), and
the report lists the verdicts that change.
"""

from __future__ import annotations

from dataclasses import dataclass

REPRODUCED = "reproduced"
PARTLY = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_JUDGED = "not judged"

#: The thresholds of the rule (fractions of the judged primary claims that pass).
THRESHOLDS: dict[str, float] = {
    "calibration_reproduced": 1.0,
    "prediction_reproduced": 0.8,
    "calibration_partly": 0.5,
    "prediction_partly": 0.5,
}

#: What each threshold is, for the report's table.
THRESHOLD_TEXT: dict[str, str] = {
    "calibration_reproduced": "calibration claims passed, for reproduced",
    "prediction_reproduced": "predictions passed, for reproduced",
    "calibration_partly": "calibration claims passed, for partly reproduced",
    "prediction_partly": "predictions passed, for partly reproduced",
}

# Fractions are compared as passed >= t x judged, with room for the rounding of t x judged (e.g.
# 0.45 x 20 = 9.000000000000002 must admit 9 of 20).
_EPS = 1e-9


@dataclass(frozen=True)
class Counts:
    """The primary claims of one role: passed and judged (pass + fail + inconclusive)."""

    passed: int
    judged: int

    def meets(self, t: float) -> bool:
        """At least the fraction `t` passes (vacuously true when nothing is judged)."""
        return self.judged == 0 or self.passed >= t * self.judged - _EPS

    def text(self, noun: str) -> str:
        if self.judged == 0:
            return f"no {noun}"
        if self.passed == self.judged:
            if self.judged == 1:
                return f"the one {noun[:-1]} passes"
            return f"both {noun} pass" if self.judged == 2 else f"all {self.judged} {noun} pass"
        return f"{self.passed} of {self.judged} {noun} pass ({100 * self.passed / self.judged:.0f} %)"


def verdict(cal: Counts, pred: Counts, t: dict[str, float] | None = None) -> tuple[str, str]:
    """The verdict and its reason in one line (what decided it), under thresholds `t` (default
    `THRESHOLDS`)."""
    t = dict(THRESHOLDS, **(t or {}))
    if pred.judged == 0:
        return NOT_JUDGED, "no prediction claim is judged"
    c, p = cal.text("calibration claims"), pred.text("predictions")
    pct = lambda x: f"{100 * x:.0f} %"  # noqa: E731
    if cal.meets(t["calibration_reproduced"]) and pred.meets(t["prediction_reproduced"]):
        return REPRODUCED, f"{c}; {p}"
    if cal.meets(t["calibration_partly"]) and pred.meets(t["prediction_partly"]):
        if not cal.meets(t["calibration_reproduced"]):
            why = f"{c}, under the {pct(t['calibration_reproduced'])} needed to be reproduced; {p}"
        else:
            why = f"{p}, under the {pct(t['prediction_reproduced'])} needed to be reproduced; {c}"
        return PARTLY, why
    if not cal.meets(t["calibration_partly"]):
        return NOT_REPRODUCED, f"{c}, under {pct(t['calibration_partly'])}: the baseline is not matched; {p}"
    return NOT_REPRODUCED, f"{p}, under {pct(t['prediction_partly'])}; {c}"


def sensitivity(rows: dict[str, tuple[Counts, Counts]], step: float = 0.1) -> list[dict]:
    """For each threshold moved by -`step` and +`step` of itself (the others kept): the rows whose
    verdict changes, as ``{"threshold", "value", "moved", "changes": [(row, before, after)]}``.
    A threshold moved above 100 % cannot be met: every row that needed it loses that verdict."""
    base = {k: verdict(c, p)[0] for k, (c, p) in rows.items()}
    out = []
    for name, value in THRESHOLDS.items():
        for sign in (-1, +1):
            moved = value * (1 + sign * step)
            changes = []
            for k, (c, p) in rows.items():
                v = verdict(c, p, {name: moved})[0]
                if v != base[k]:
                    changes.append((k, base[k], v))
            out.append({"threshold": name, "value": value, "moved": moved, "changes": changes})
    return out
