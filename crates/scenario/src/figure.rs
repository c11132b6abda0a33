//! `[[figure]]`: how the report re-draws a paper's figure or table from a sweep's results, with
//! the paper's published values marked on the same axes.
//!
//! ```toml
//! [[figure]]
//! title = "Fig. 5: bw packets received vs. flood rate"
//! paper = "paper 000 Fig. 5"
//! x = "traffic.floodclients.rate_pps"   # a swept key; without `x`, one bar per variant
//! y = "bw_rx_pps"                       # a metric (a results.csv column)
//! variants = ["original", "proposed"]   # default: all
//! marks = [
//!   { x = 1000, y = 34000, label = "34,000 pkt/s without flood" },   # a point
//!   { x = 190000, label = "proposed > original from here" },          # a vertical line
//!   { y = 81.9, variant = "original", label = "81.90 us" },            # a bar's paper value
//! ]
//! ```
//!
//! Rows that differ only in keys other than `x` (e.g. seeds) are averaged, with their spread drawn.
//! `at = { key = value, ... }` keeps only the rows at those sweep coordinates.
//!
//! `kind = "histogram"`: `y` names a histogram, the family of columns `<y>_h<lo>` (count in
//! [lo, next lo)); one set of bars per value of the swept key `series` (or per variant), averaged
//! over the other rows. Marks `{ x, y }` are the paper's counts at bin `x`; `{ x }` a line.
//!
//! `measured = "FILE.csv"` (a path relative to the scenario file, inside its directory: no
//! absolute path, no `..`, no link leading out; see `files::read_measured`) overlays measurements taken
//! outside the model on the same axes, e.g. a `hostsim live` sweep: a CSV shaped like
//! `results.csv` (a `variant` column, the `x` column, the `y` column; repeated rows averaged),
//! drawn dashed with `measured_label` in its legend; `measured_x` names the CSV column to use as
//! x when it differs (e.g. the rate a live sender achieved rather than the one it was asked for), and
//! `measured_y` the column to draw as y when it differs (e.g. a live run's `cpu0_router_frac` for
//! the model's `cpu0_busy_frac`). `hostsim reproduce`
//! copies the file (with its permission bits) next to the results so the report finds it (and
//! `FILE.run.json`, the live run's record of the machine it ran on, if there is one: the report's
//! summary shows it).
//!
//! `headline = true` picks the figure the report's summary draws small for the paper (default: the
//! first figure of the paper's first scenario).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub title: String,
    /// Where it is in the paper (figure/table).
    #[serde(default)]
    pub paper: String,
    /// The swept key on the horizontal axis; none = a bar per variant.
    #[serde(default)]
    pub x: Option<String>,
    /// The metric on the vertical axis (for a histogram: the column family's prefix).
    pub y: String,
    /// `line` (default with `x`), `bar` (default without), or `histogram`.
    #[serde(default)]
    pub kind: Option<FigureKind>,
    /// Only the rows at these sweep coordinates.
    #[serde(default)]
    pub at: toml::Table,
    /// Histogram: a swept key whose values are drawn as separate series.
    #[serde(default)]
    pub series: Option<String>,
    /// A logarithmic vertical axis (histograms whose bins differ by orders of magnitude, or a
    /// metric that spans several, such as a latency below and past saturation).
    #[serde(default)]
    pub log_y: bool,
    /// Variants drawn (default: all, in file order).
    #[serde(default)]
    pub variants: Vec<String>,
    #[serde(default)]
    pub xlabel: Option<String>,
    #[serde(default)]
    pub ylabel: Option<String>,
    /// The paper's published values on the same axes.
    #[serde(default)]
    pub marks: Vec<PaperMark>,
    /// Measurements to overlay (CSV like results.csv), relative to the scenario file.
    #[serde(default)]
    pub measured: Option<String>,
    /// Legend name of the measurements (default "measured").
    #[serde(default)]
    pub measured_label: Option<String>,
    /// The figure the report's summary draws small for the scenario's paper (default: the
    /// first figure of its first scenario).
    #[serde(default)]
    pub headline: bool,
    /// The measured CSV's column to use as x (default: `x`), e.g. what a live sender achieved
    /// where the model's swept key is what its source sends.
    #[serde(default)]
    pub measured_x: Option<String>,
    /// The measured CSV's column to draw as y (default: `y`), where the measurement names the
    /// same quantity otherwise (e.g. a live run's `cpu0_router_frac` for the model's
    /// `cpu0_busy_frac`).
    #[serde(default)]
    pub measured_y: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    Line,
    Bar,
    Histogram,
}

/// A published value: a point (`x` and `y`), a vertical line (`x` only), a horizontal line (`y`
/// only), with `variant` on a bar figure the paper's value for that bar, or a ratio to another
/// variant's simulated value (`ratio`, `of`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PaperMark {
    #[serde(default)]
    pub x: Option<f64>,
    #[serde(default)]
    pub y: Option<f64>,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub label: String,
    /// A value the paper gives as a ratio to another variant (`of`): drawn at `ratio` x that
    /// variant's simulated mean at `x`, or, without `x`, as a line at `ratio` x its maximum
    /// (e.g. "dual-CPU load is 0.57x the single CPU's").
    #[serde(default)]
    pub ratio: Option<f64>,
    #[serde(default)]
    pub of: Option<String>,
}
