//! `[[expect]]`: a paper's claim as a comparison of metrics between sweep points and variants.
//!
//! ```toml
//! [[expect]]
//! claim = "legacy path livelocks: at the highest load it delivers under 20% of its peak"
//! paper = "Mogul & Ramakrishnan 1997, Fig. 6-1"
//! metric = "delivered_pps"          # left-hand side ...
//! variant = "legacy"
//! at = { "traffic.load.rate_pps" = 400000 }   # ... at this sweep point (or `reduce`)
//! op = "<"                          # <, <=, >, >=, approx
//! rhs = { metric = "delivered_pps", variant = "legacy", reduce = "max" }
//! factor = 0.2                      # right-hand side = factor × rhs (or a literal `value`)
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toml::{Table, Value};

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "approx")]
    Approx,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    First,
    Last,
    Max,
    Min,
    Mean,
}

/// Which value(s) of a metric: a variant, sweep coordinates, and how to reduce several rows.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    pub metric: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub at: Table,
    #[serde(default)]
    pub reduce: Option<Reduce>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub claim: String,
    /// Where the paper states it (figure/table) and its number, as text.
    #[serde(default)]
    pub paper: String,
    /// The paper's published value, when the claim has one (drawn in the report).
    #[serde(default)]
    pub paper_value: Option<f64>,
    pub metric: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub at: Table,
    #[serde(default)]
    pub reduce: Option<Reduce>,
    pub op: Op,
    #[serde(default)]
    pub value: Option<f64>,
    #[serde(default)]
    pub rhs: Option<Selector>,
    #[serde(default = "one")]
    pub factor: f64,
    /// Relative tolerance for `approx`.
    #[serde(default)]
    pub tolerance: Option<f64>,
}

fn one() -> f64 {
    1.0
}

/// One row of results: a variant at a sweep point with its metrics.
#[derive(Clone, Debug)]
pub struct Row {
    pub variant: String,
    pub point: Vec<(String, Value)>,
    pub metrics: BTreeMap<String, f64>,
}

/// The verdict on one claim.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ExpectResult {
    pub scenario: String,
    pub claim: String,
    pub paper: String,
    pub paper_value: Option<f64>,
    /// The simulated left-hand side.
    pub sim: Option<f64>,
    /// The right-hand side it was compared with (after `factor`).
    pub rhs: Option<f64>,
    pub op: Op,
    pub pass: bool,
    /// Why the claim could not be evaluated, if it couldn't.
    pub error: Option<String>,
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_float().or(a.as_integer().map(|i| i as f64)), b.as_float().or(b.as_integer().map(|i| i as f64))) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

fn select(rows: &[Row], metric: &str, variant: Option<&str>, at: &Table, reduce: Option<Reduce>) -> Result<f64, String> {
    let vals: Vec<f64> = rows
        .iter()
        .filter(|r| variant.is_none_or(|v| r.variant == v))
        .filter(|r| at.iter().all(|(k, v)| r.point.iter().any(|(pk, pv)| pk == k && same(pv, v))))
        .map(|r| {
            r.metrics.get(metric).copied().ok_or_else(|| format!("no metric `{metric}` (see summary.json `metrics`)"))
        })
        .collect::<Result<_, _>>()?;
    if vals.is_empty() {
        return Err(format!("no result matches variant {variant:?} at {at}"));
    }
    match reduce {
        None if vals.len() == 1 => Ok(vals[0]),
        None => Err(format!("{} results match; add `at` coordinates or a `reduce`", vals.len())),
        Some(Reduce::First) => Ok(vals[0]),
        Some(Reduce::Last) => Ok(vals[vals.len() - 1]),
        Some(Reduce::Max) => Ok(vals.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        Some(Reduce::Min) => Ok(vals.iter().copied().fold(f64::INFINITY, f64::min)),
        Some(Reduce::Mean) => Ok(vals.iter().sum::<f64>() / vals.len() as f64),
    }
}

impl Expect {
    /// Evaluate against a sweep's rows. A NaN (e.g. a stalled measurement) fails the claim.
    pub fn evaluate(&self, scenario: &str, rows: &[Row]) -> ExpectResult {
        let lhs = select(rows, &self.metric, self.variant.as_deref(), &self.at, self.reduce);
        let rhs = match (&self.rhs, self.value) {
            (Some(s), _) => select(rows, &s.metric, s.variant.as_deref(), &s.at, s.reduce).map(|v| v * self.factor),
            (None, Some(v)) => Ok(v * self.factor),
            (None, None) => Err("neither `value` nor `rhs` given".to_string()),
        };
        let mut r = ExpectResult {
            scenario: scenario.to_string(),
            claim: self.claim.clone(),
            paper: self.paper.clone(),
            paper_value: self.paper_value,
            sim: lhs.as_ref().ok().copied(),
            rhs: rhs.as_ref().ok().copied(),
            op: self.op,
            pass: false,
            error: None,
        };
        match (lhs, rhs) {
            (Ok(a), Ok(b)) => {
                r.pass = match self.op {
                    Op::Lt => a < b,
                    Op::Le => a <= b,
                    Op::Gt => a > b,
                    Op::Ge => a >= b,
                    Op::Approx => (a - b).abs() <= self.tolerance.unwrap_or(0.05) * b.abs(),
                };
            }
            (Err(e), _) | (_, Err(e)) => r.error = Some(e),
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        let mk = |v: &str, x: i64, y: f64| Row {
            variant: v.into(),
            point: vec![("rate".into(), Value::Integer(x))],
            metrics: [("m".to_string(), y)].into_iter().collect(),
        };
        vec![mk("a", 1, 10.0), mk("a", 2, 30.0), mk("a", 3, 5.0), mk("b", 3, 25.0)]
    }

    fn ex(src: &str) -> Expect {
        toml::from_str(src).unwrap()
    }

    #[test]
    fn point_vs_reduced_rhs() {
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=3}\nop='<'\nrhs={metric='m', variant='a', reduce='max'}\nfactor=0.2");
        let r = e.evaluate("s", &rows());
        assert!(r.pass, "{r:?}");
        assert_eq!(r.sim, Some(5.0));
        assert_eq!(r.rhs, Some(6.0));
    }

    #[test]
    fn ambiguous_selection_is_an_error_not_a_pass() {
        let e = ex("claim='c'\nmetric='m'\nop='>'\nvalue=0");
        let r = e.evaluate("s", &rows());
        assert!(!r.pass);
        assert!(r.error.unwrap().contains("4 results match"));
    }

    #[test]
    fn nan_fails() {
        let mut rs = rows();
        rs[0].metrics.insert("m".into(), f64::NAN);
        let e = ex("claim='c'\nmetric='m'\nvariant='a'\nat={rate=1}\nop='approx'\nvalue=10\ntolerance=0.5");
        assert!(!e.evaluate("s", &rs).pass);
    }
}
