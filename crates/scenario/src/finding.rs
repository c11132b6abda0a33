//! What was found about a claim, written so that it stays true: the `finding`, its `detail`, and
//! the placeholders that fill their numbers from the claim's own results.
//!
//! ```toml
//! [[expect]]
//! claim = "original: receive livelock past ~400,000 pkt/s (bw under 10% of 34,000 at 450,000)"
//! ...
//! finding = "Fails: bw keeps {sim} pkt/s (95% interval {sim_ci}) against {rhs}, with half the CPUs idle."
//! detail = "Anything longer: the evidence, the runs tried, the numbers measured once ..."
//! finding_model = "3f2a9c0d1e4b5a67"   # only if finding or detail has numbers of its own
//! ```
//!
//! - `finding`: what was found and why, **at most [`FINDING_CHARS_MAX`] characters and two
//!   sentences** as the reader sees it. Every claim that does not pass has one (the report and the
//!   tests ask for it); it is shown beside the claim.
//! - `detail`: anything longer, of any length; the report folds it away (`<details>`).
//! - A number in either is a **placeholder** filled from the claim's results when it is judged:
//!   `{sim}`, `{rhs}`, `{paper_value}`, `{judged}` (the judged statistic's mean), the 95%
//!   intervals `{sim_ci}`, `{rhs_ci}`, `{judged_ci}` (as `[lo, hi]`), `{held}` (the fraction of
//!   seeds on which the claim holds, as a percentage), `{seeds}` (how many) and `{tolerance}`.
//!   A format may follow a colon: `%` (a fraction as a percentage: `{sim:%}` gives `51.3%`) and
//!   `.N` (N significant digits, 1 to 6; default 4), e.g. `{sim:%.2}`. `{{` and `}}` are braces.
//!   Large values print as integers with thousands separators (`20,913`), as in the report.
//! - Any other digit in `finding` or `detail` (a number measured on another run, a sweep of a
//!   parameter, a kernel version) makes the text depend on the model it was written against:
//!   the claim must then record that model's [`crate::MODEL_SOURCE_ID`] in `finding_model`
//!   (`hostsim --version` and `hostsim.MODEL_SOURCE_ID` print it), and the report marks the
//!   finding *stale* once the model's sources differ from it.
//!
//! Readings: one sentence of a paper may be read in several ways, each a claim. They share a
//! `claim_id`; each names its `reading`, and exactly one of them is `primary = true` (the default).
//! The report's summary counts a paper's claims under their primary reading and the other
//! readings' tallies apart. A claim without `claim_id` is its own sentence, its own primary reading.

/// The most characters a `finding` may have, as shown (placeholders filled).
pub const FINDING_CHARS_MAX: usize = 300;
/// The most sentences a `finding` may have.
pub const FINDING_SENTENCES_MAX: usize = 2;

/// The placeholder names, each with what it stands for (the docs and error messages list them).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("sim", "the simulated value: mean over seeds"),
    ("sim_ci", "its 95% interval"),
    ("rhs", "the target it is compared with: mean over seeds"),
    ("rhs_ci", "its 95% interval"),
    ("paper_value", "the paper's published value"),
    ("judged", "the judged statistic (sim - target, or sim / target - 1): mean over seeds"),
    ("judged_ci", "its 95% interval"),
    ("held", "the fraction of seeds on which the claim holds (a percentage)"),
    ("seeds", "the number of seeds"),
    ("tolerance", "the claim's tolerance"),
];

/// One piece of a finding's text.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Hole { name: &'a str, percent: bool, digits: usize },
}

/// Split a text into literal pieces and placeholders; an error says what is wrong.
fn parse(text: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some(i) = rest.find(['{', '}']) else {
            out.push(Piece::Text(rest));
            break;
        };
        if i > 0 {
            out.push(Piece::Text(&rest[..i]));
        }
        rest = &rest[i..];
        if rest.starts_with("{{") || rest.starts_with("}}") {
            out.push(Piece::Text(&rest[..1]));
            rest = &rest[2..];
            continue;
        }
        if rest.starts_with('}') {
            return Err("a `}` without its `{` (write `}}` for a brace)".into());
        }
        let end = rest.find('}').ok_or("a `{` without its `}` (write `{{` for a brace)")?;
        let inner = &rest[1..end];
        let (name, spec) = inner.split_once(':').unwrap_or((inner, ""));
        if !PLACEHOLDERS.iter().any(|(n, _)| *n == name) {
            let names: Vec<&str> = PLACEHOLDERS.iter().map(|(n, _)| *n).collect();
            return Err(format!("unknown placeholder `{{{inner}}}`, expected one of {}", names.join(", ")));
        }
        let percent = spec.starts_with('%');
        let digits_spec = spec.strip_prefix('%').unwrap_or(spec);
        let digits = match digits_spec {
            "" => 4,
            d => match d.strip_prefix('.').and_then(|n| n.parse::<usize>().ok()) {
                Some(n @ 1..=6) => n,
                _ => {
                    return Err(format!(
                        "placeholder `{{{inner}}}`: unknown format `{spec}`, expected `%`, `.N` or `%.N` (N = 1 to 6)"
                    ))
                }
            },
        };
        out.push(Piece::Hole { name, percent, digits });
        rest = &rest[end + 1..];
    }
    Ok(out)
}

/// A number as the report prints it: with thousands separators from 10,000 on (rounded) and for
/// whole numbers from 1,000, else `digits` significant digits without trailing zeros.
pub fn fmt_num(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "∞".into() } else { "-∞".into() };
    }
    if (1e4..1e15).contains(&v.abs()) || ((1e3..1e4).contains(&v.abs()) && v == v.round()) {
        let n = v.round() as i64;
        let s = n.unsigned_abs().to_string();
        let mut grouped = String::new();
        for (k, c) in s.chars().enumerate() {
            if k > 0 && (s.len() - k).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        return if n < 0 { format!("-{grouped}") } else { grouped };
    }
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    let d = digits as i32;
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if exp < -4 || exp >= d {
        let s = format!("{:.*e}", (d - 1).max(0) as usize, v);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        return format!("{}e{e}", trim(m.to_string()));
    }
    let s = trim(format!("{:.*}", (d - 1 - exp).max(0) as usize, v));
    match s.parse::<f64>() {
        Ok(r) if r.abs() >= 1e4 => fmt_num(r, digits),
        _ => s,
    }
}

fn fmt_value(v: Option<f64>, percent: bool, digits: usize) -> String {
    match v {
        None => "no value".into(),
        Some(x) if percent => format!("{}%", fmt_num(x * 100.0, digits)),
        Some(x) => fmt_num(x, digits),
    }
}

/// What the placeholders read: a claim's results over its seeds (expect.rs fills it from the
/// claim's `ExpectResult`; this module does not import that one, which imports this).
#[derive(Clone, Copy, Debug, Default)]
pub struct Values {
    pub sim: Option<f64>,
    pub sim_ci: Option<[f64; 2]>,
    pub rhs: Option<f64>,
    pub rhs_ci: Option<[f64; 2]>,
    pub paper_value: Option<f64>,
    pub judged_mean: Option<f64>,
    pub judged_ci: Option<[f64; 2]>,
    pub held: Option<f64>,
    pub seeds: usize,
    pub tolerance: Option<f64>,
}

/// The text with its placeholders filled from `r`. The text must have passed [`check`].
pub fn render(text: &str, r: &Values) -> String {
    let Ok(pieces) = parse(text) else { return text.to_string() };
    let mut out = String::with_capacity(text.len() + 16);
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Hole { name, percent, digits } => {
                let interval = |ci: Option<[f64; 2]>| match ci {
                    Some([lo, hi]) => {
                        format!("[{}, {}]", fmt_value(Some(lo), percent, digits), fmt_value(Some(hi), percent, digits))
                    }
                    None => "no value".into(),
                };
                let s = match name {
                    "sim" => fmt_value(r.sim, percent, digits),
                    "sim_ci" => interval(r.sim_ci),
                    "rhs" => fmt_value(r.rhs, percent, digits),
                    "rhs_ci" => interval(r.rhs_ci),
                    "paper_value" => fmt_value(r.paper_value, percent, digits),
                    "judged" => fmt_value(r.judged_mean, percent, digits),
                    "judged_ci" => interval(r.judged_ci),
                    // A fraction of seeds reads best as a percentage whatever the format says.
                    "held" => fmt_value(r.held, true, digits),
                    "seeds" => r.seeds.to_string(),
                    "tolerance" => fmt_value(r.tolerance, percent, digits),
                    _ => unreachable!("parse admits only known names"),
                };
                out.push_str(&s);
            }
        }
    }
    out
}

/// Does the text have a digit outside its placeholders (a number of its own)?
pub fn has_literal_number(text: &str) -> bool {
    match parse(text) {
        Ok(pieces) => pieces.iter().any(|p| matches!(p, Piece::Text(t) if t.chars().any(|c| c.is_ascii_digit()))),
        Err(_) => text.chars().any(|c| c.is_ascii_digit()),
    }
}

/// Words after which a full stop does not end a sentence.
const ABBREVIATIONS: &[&str] =
    &["e.g.", "i.e.", "vs.", "cf.", "Fig.", "Figs.", "ref.", "refs.", "resp.", "approx.", "No.", "Eq.", "al.", "etc."];

/// Sentences in a text: a `.`, `!` or `?` ends one when a space and a capital letter (or the
/// end of the text) follow, and it does not close one of [`ABBREVIATIONS`].
pub fn sentences(text: &str) -> usize {
    let t = text.trim();
    if t.is_empty() {
        return 0;
    }
    let chars: Vec<char> = t.chars().collect();
    let mut n = 0;
    for i in 0..chars.len() {
        if !matches!(chars[i], '.' | '!' | '?') {
            continue;
        }
        let word_start = chars[..i].iter().rposition(|c| c.is_whitespace() || *c == '(').map_or(0, |k| k + 1);
        let word: String = chars[word_start..=i].iter().collect();
        if ABBREVIATIONS.contains(&word.as_str()) {
            continue;
        }
        let next = chars[i + 1..].iter().skip_while(|c| matches!(c, '"' | '\'' | ')' | ']'));
        let mut next = next.peekable();
        match next.next() {
            None => n += 1,
            Some(c) if c.is_whitespace() && next.find(|c| !c.is_whitespace()).is_some_and(|c| c.is_uppercase()) => {
                n += 1
            }
            _ => {}
        }
    }
    // A last sentence without its full stop counts too.
    if !matches!(chars.last(), Some('.' | '!' | '?' | '"' | ')' | ']')) {
        n += 1;
    }
    n.max(1)
}

/// What is wrong with a claim's finding texts, as (key, message), if anything: placeholders that
/// do not parse, a finding over the limits as written, numbers of its own without
/// `finding_model`, a `finding_model` that is not a model-source id.
pub fn check(finding: &str, detail: &str, finding_model: Option<&str>) -> Result<(), (&'static str, String)> {
    parse(finding).map_err(|e| ("finding", e))?;
    parse(detail).map_err(|e| ("detail", e))?;
    let n = finding.chars().count();
    if n > FINDING_CHARS_MAX {
        return Err((
            "finding",
            format!("{n} characters, at most {FINDING_CHARS_MAX}: say what was found and why in two sentences, move the rest to `detail`"),
        ));
    }
    let s = sentences(finding);
    if s > FINDING_SENTENCES_MAX {
        return Err(("finding", format!("{s} sentences, at most {FINDING_SENTENCES_MAX}: move the rest to `detail`")));
    }
    if finding.trim().is_empty() && !detail.trim().is_empty() {
        return Err(("detail", "a `detail` needs a `finding` that it details".into()));
    }
    match finding_model {
        Some(m) if !(m.len() == 16 && m.chars().all(|c| c.is_ascii_hexdigit())) => Err((
            "finding_model",
            format!("expected a model-source id (16 hex digits, `hostsim --version` prints it), got `{m}`"),
        )),
        None if has_literal_number(finding) || has_literal_number(detail) => {
            let key = if has_literal_number(finding) { "finding" } else { "detail" };
            Err((
                key,
                "has numbers of its own: fill them from the claim's results with placeholders ({sim}, {sim_ci}, {rhs}, ...) \
                 or record the model they were measured on with `finding_model = \"<MODEL_SOURCE_ID>\"`"
                    .into(),
            ))
        }
        _ => Ok(()),
    }
}

/// What [`check_readings`] reads of a claim (taken from its `[[expect]]` entry; the claims'
/// module is above this one, so it hands over what is needed rather than the entry).
#[derive(Clone, Copy, Debug)]
pub struct Reading<'a> {
    /// The claim's sentence (its id when it has no `claim_id`).
    pub claim: &'a str,
    pub claim_id: Option<&'a str>,
    pub reading: Option<&'a str>,
    pub primary: bool,
    /// Its operator bounds the value from above (`<`, `<=`) or from below (`>`, `>=`).
    pub from_above: bool,
    pub from_below: bool,
    /// `role = "calibration"`.
    pub calibration: bool,
    pub applicable: bool,
}

/// What is wrong with the claims' readings, as (claim index, key, message), if anything: a
/// `reading` without `claim_id`, a shared `claim_id` whose claims do not each name their
/// reading, or that has not exactly one primary reading; two claims of one sentence and reading
/// that are not the two ends of a range (one bounding from above, `<`/`<=`, one from below,
/// `>`/`>=`, alike in role, primary and applicable: `expect::evaluate_claims` judges them as one).
pub fn check_readings<'a>(expects: &[Reading<'a>]) -> Result<(), (usize, &'static str, String)> {
    let id_of = |e: &Reading<'a>| -> &'a str { e.claim_id.unwrap_or(e.claim) };
    for (i, e) in expects.iter().enumerate() {
        if e.claim_id.is_none() && (e.reading.is_some() || !e.primary) {
            let k = if e.reading.is_some() { "reading" } else { "primary" };
            return Err((
                i,
                k,
                "a reading of a paper sentence needs the sentence's `claim_id`, shared by its readings".into(),
            ));
        }
        let id = id_of(e);
        let ends: Vec<usize> = expects
            .iter()
            .enumerate()
            .filter(|(_, f)| id_of(f) == id && f.reading == e.reading)
            .map(|(j, _)| j)
            .collect();
        if ends.len() > 1 && ends[0] == i {
            let (a, b) = (&expects[ends[0]], &expects[ends[1]]);
            let pair = ends.len() == 2
                && a.from_above != b.from_above
                && (a.from_above || a.from_below)
                && (b.from_above || b.from_below)
                && (a.calibration, a.primary, a.applicable) == (b.calibration, b.primary, b.applicable);
            if !pair {
                let reading = e.reading.map(|r| format!(" (reading `{r}`)")).unwrap_or_default();
                return Err((
                    ends[1],
                    "claim_id",
                    format!(
                        "`{id}`{reading} is claimed {} times: two claims of one sentence and reading are the two ends \
                         of a range, judged as one (one `<` or `<=`, one `>` or `>=`, the same role, primary and \
                         applicable); give another reading its own `reading`",
                        ends.len()
                    ),
                ));
            }
        }
        let Some(id) = e.claim_id else { continue };
        let same: Vec<usize> =
            expects.iter().enumerate().filter(|(_, f)| f.claim_id == Some(id)).map(|(j, _)| j).collect();
        let mut readings: Vec<Option<&str>> = same.iter().map(|&j| expects[j].reading).collect();
        readings.sort();
        readings.dedup();
        if readings.len() > 1 && e.reading.is_none_or(|r| r.trim().is_empty()) {
            return Err((
                i,
                "claim_id",
                format!("`{id}` is read {} ways: name this claim's `reading`", readings.len()),
            ));
        }
        if same[0] == i {
            // A range's two ends are one reading.
            let mut primaries: Vec<Option<&str>> =
                same.iter().filter(|&&j| expects[j].primary).map(|&j| expects[j].reading).collect();
            primaries.sort();
            primaries.dedup();
            if primaries.len() != 1 {
                return Err((
                    i,
                    "claim_id",
                    format!(
                        "`{id}` has {} primary readings, expected exactly one (`primary = false` on the others)",
                        primaries.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_claims_of_one_reading_must_be_the_ends_of_a_range() {
        // A claim of sentence `s` (`claim_id`), reading `reading`, with operator `op`.
        let ex = |claim: &'static str, reading: &'static str, op: &str| Reading {
            claim,
            claim_id: Some("s"),
            reading: Some(reading),
            primary: true,
            from_above: matches!(op, "<" | "<="),
            from_below: matches!(op, ">" | ">="),
            calibration: false,
            applicable: true,
        };
        let upper = ex("a", "r1", "<=");
        let lower = ex("b", "r1", ">");
        let other = Reading { primary: false, ..ex("c", "r2", "<") };
        assert!(check_readings(&[upper, lower, other]).is_ok());
        // Two upper ends are no range.
        let e = check_readings(&[upper, other, ex("d", "r1", "<")]).unwrap_err();
        assert_eq!((e.0, e.1), (2, "claim_id"));
        assert!(e.2.contains("two ends of a range"), "{}", e.2);
        // Nor is a band, nor three claims, nor ends unlike in role.
        assert!(check_readings(&[upper, ex("d", "r1", "approx")]).is_err());
        assert!(check_readings(&[upper, lower, ex("d", "r1", ">=")]).is_err());
        let cal = Reading { calibration: true, ..ex("b", "r1", ">") };
        assert!(check_readings(&[upper, cal]).is_err());
        // A range's ends are one reading: one primary reading between them.
        assert!(check_readings(&[upper, lower]).is_ok());
    }

    #[test]
    fn numbers_print_as_in_the_report() {
        assert_eq!(fmt_num(20913.4, 4), "20,913");
        assert_eq!(fmt_num(-102549.0, 4), "-102,549");
        assert_eq!(fmt_num(0.2499, 4), "0.2499");
        assert_eq!(fmt_num(1.0, 4), "1");
        assert_eq!(fmt_num(2800.0, 4), "2,800");
        assert_eq!(fmt_num(2733.33, 4), "2733");
        assert_eq!(fmt_num(81.8649, 4), "81.86");
        assert_eq!(fmt_num(0.0004394, 2), "0.00044");
        assert_eq!(fmt_num(0.00001234, 3), "1.23e-5");
        assert_eq!(fmt_num(9999.6, 4), "10,000", "rounding up into the grouped range groups");
        assert_eq!(fmt_num(0.0, 4), "0");
    }

    #[test]
    fn placeholders_parse_and_reject_unknown_names_and_formats() {
        assert!(parse("{sim} of {rhs:%} in {sim_ci:.2} {{literal}}").is_ok());
        assert!(parse("{simulated}").unwrap_err().contains("unknown placeholder `{simulated}`"));
        assert!(parse("{sim:x}").unwrap_err().contains("unknown format `x`"));
        assert!(parse("{sim:.9}").unwrap_err().contains("N = 1 to 6"));
        assert!(parse("a { b").unwrap_err().contains("without its `}`"));
        assert!(parse("a } b").unwrap_err().contains("without its `{`"));
    }

    #[test]
    fn literal_numbers_are_digits_outside_placeholders() {
        assert!(!has_literal_number("bw keeps {sim} pkt/s against {rhs:%.2}"));
        assert!(has_literal_number("bw keeps 20,800 pkt/s"));
        assert!(has_literal_number("Linux 2.4's backlog"));
    }

    #[test]
    fn sentences_skip_abbreviations_and_decimal_points() {
        assert_eq!(sentences("One. Two."), 2);
        assert_eq!(sentences("Linux 2.4 (e.g. Red Hat) keeps 0.5 of it, vs. Fig. 5."), 1);
        assert_eq!(sentences("One. Two. Three"), 3);
        assert_eq!(sentences("One; two: three."), 1);
    }

    #[test]
    fn check_asks_for_short_findings_and_a_model_for_literal_numbers() {
        assert!(check("Fails: {sim} against {rhs}.", "", None).is_ok());
        assert_eq!(check(&"x".repeat(301), "", None).unwrap_err().0, "finding");
        assert!(check("A. B. C.", "", None).unwrap_err().1.contains("3 sentences"));
        assert_eq!(check("Fails at 450,000.", "", None).unwrap_err().0, "finding");
        assert_eq!(check("Fails.", "Measured 3 times.", None).unwrap_err().0, "detail");
        assert!(check("Fails at 450,000.", "", Some("0123456789abcdef")).is_ok());
        assert_eq!(check("Fails.", "", Some("v1")).unwrap_err().0, "finding_model");
        assert_eq!(check("", "why", None).unwrap_err().0, "detail");
    }
}
