"""What was found about each claim, on a full `hostsim reproduce` (the session's `reproduced`):
every claim that does not pass says why, in a finding short enough to read in the claims table
(crates/scenario/src/finding.rs); its numbers come from the claim's own results or it names the
model they were measured on; readings of one paper sentence have one primary reading; nothing
in expectations.json names a path of the machine that made it."""

import json
import re

from conftest import ROOT

FINDING_CHARS_MAX = 300


def claims(out):
    return json.loads((out / "expectations.json").read_text())


def test_every_claim_that_does_not_pass_has_a_finding(reproduced):
    # A model change that flips a claim to failing (or inconclusive, or not testable) must bring
    # the finding that says why.
    missing = [
        f"{c['scenario']}: {c['claim']} ({c['verdict']})"
        for c in claims(reproduced)
        if c["verdict"] != "pass" and not c["finding"].strip()
    ]
    assert not missing, "claims without a finding:\n" + "\n".join(missing)


def test_findings_are_short_and_filled_and_their_own_numbers_are_stamped(reproduced):
    for c in claims(reproduced):
        where = f"{c['scenario']}: {c['claim']}"
        assert len(c["finding"]) <= FINDING_CHARS_MAX, f"{where}: {len(c['finding'])} characters as shown"
        for text in (c["finding"], c["detail"]):
            # Every placeholder was filled (hostsim check rejects unknown ones).
            assert not re.search(r"\{[a-z_]+(:[^}]*)?\}", text), f"{where}: unfilled placeholder in {text!r}"
        if c["finding_model"] is None:
            assert not c["finding_stale"], f"{where}: only a stamped finding can be stale"
        else:
            assert re.fullmatch(r"[0-9a-f]{16}", c["finding_model"]), where


def test_a_sentence_has_one_primary_reading(reproduced):
    by_sentence: dict[tuple[str, str], list[dict]] = {}
    for c in claims(reproduced):
        by_sentence.setdefault((c["scenario"], c["claim_id"]), []).append(c)
    for (scenario, sentence), cs in by_sentence.items():
        assert sum(c["primary"] for c in cs) == 1, (
            f"{scenario}: `{sentence}` has {sum(c['primary'] for c in cs)} primary readings"
        )
        if len(cs) > 1:
            assert all(c["reading"] for c in cs), f"{scenario}: `{sentence}`: every reading is named"


def test_expectations_json_names_no_path_of_this_machine(reproduced):
    text = (reproduced / "expectations.json").read_text()
    for p in {str(ROOT), str(reproduced), str(reproduced.parent), "/tmp/", "/home/", "/root/"}:
        assert p not in text, f"expectations.json contains {p!r}"
