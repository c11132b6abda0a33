"""The verdict rule (python/hostsim/verdicts.py) on made-up counts: its thresholds, its edge cases
and how the verdicts move when a threshold does."""

from hostsim.verdicts import NOT_JUDGED, NOT_REPRODUCED, PARTLY, REPRODUCED, THRESHOLDS, Counts, sensitivity, verdict


def test_the_rule_as_documented():
    assert THRESHOLDS == {
        "calibration_reproduced": 1.0,
        "prediction_reproduced": 0.8,
        "calibration_partly": 0.5,
        "prediction_partly": 0.5,
    }
    assert verdict(Counts(4, 4), Counts(8, 10))[0] == REPRODUCED
    assert verdict(Counts(4, 4), Counts(7, 10))[0] == PARTLY, "predictions under 80 %"
    assert verdict(Counts(3, 4), Counts(10, 10))[0] == PARTLY, "one calibration claim misses"
    assert verdict(Counts(1, 4), Counts(10, 10))[0] == NOT_REPRODUCED, "the baseline is not matched"
    assert verdict(Counts(4, 4), Counts(4, 10))[0] == NOT_REPRODUCED
    # Exactly on a threshold meets it (9 of 20 is 45 %: the rounding of 0.45 x 20 must not refuse it).
    assert verdict(Counts(2, 4), Counts(5, 10))[0] == PARTLY
    assert verdict(Counts(1, 1), Counts(9, 20), {"prediction_partly": 0.45})[0] == PARTLY


def test_no_calibration_claims_is_no_obstacle_and_no_prediction_no_verdict():
    assert verdict(Counts(0, 0), Counts(9, 10))[0] == REPRODUCED
    assert verdict(Counts(2, 2), Counts(0, 0))[0] == NOT_JUDGED


def test_the_reason_names_what_decided():
    v, why = verdict(Counts(1, 4), Counts(5, 7))
    assert v == NOT_REPRODUCED and why.startswith("1 of 4 calibration claims pass (25 %), under 50 %"), why
    v, why = verdict(Counts(9, 10), Counts(7, 14))
    assert v == PARTLY and why.startswith("9 of 10 calibration claims pass (90 %), under the 100 % needed"), why
    v, why = verdict(Counts(1, 1), Counts(11, 28))
    assert v == NOT_REPRODUCED and why.startswith("11 of 28 predictions pass (39 %), under 50 %"), why
    assert verdict(Counts(2, 2), Counts(9, 10))[1] == "both calibration claims pass; 9 of 10 predictions pass (90 %)"
    assert verdict(Counts(3, 3), Counts(1, 1))[1] == "all 3 calibration claims pass; the one prediction passes"


def test_sensitivity_lists_the_verdicts_a_moved_threshold_changes():
    rows = {"a": (Counts(4, 4), Counts(8, 10)), "b": (Counts(9, 10), Counts(6, 10)), "c": (Counts(1, 1), Counts(1, 5))}
    s = {(r["threshold"], round(r["moved"], 3)): r["changes"] for r in sensitivity(rows)}
    assert len(s) == 2 * len(THRESHOLDS)
    # 80 % -> 88 %: a's 80 % no longer reproduces; 72 % changes nothing.
    assert s[("prediction_reproduced", 0.88)] == [("a", REPRODUCED, PARTLY)]
    assert s[("prediction_reproduced", 0.72)] == []
    # 100 % -> 90 %: b's 9 of 10 calibration claims meet it, but its predictions do not reach 80 %.
    assert s[("calibration_reproduced", 0.9)] == []
    # Above 100 % no row can be reproduced.
    assert s[("calibration_reproduced", 1.1)] == [("a", REPRODUCED, PARTLY)]
    # 50 % -> 55 % of predictions: b's 60 % still meets it.
    assert s[("prediction_partly", 0.55)] == []
