//! # hostsim-options: each option declared once
//!
//! A configuration struct (a scenario's `[kernel]`, a `[[nic]]`, a mechanism's options) is
//! declared with the [`options`] attribute: per field, its doc comment, type, default and bound:
//!
//! ```
//! use hostsim_options::{int, options, Options};
//!
//! /// The example's options.
//! #[options]
//! #[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
//! #[serde(deny_unknown_fields)]
//! pub struct Example {
//!     /// Timer interrupts per second.
//!     #[option(default = 1000, bound = int(1, 10_000), why = "Linux offers 100..=1000")]
//!     pub hz: u32,
//! }
//!
//! assert_eq!(Example::default().hz, 1000);
//! let k = &Example::keys()[0];
//! assert_eq!((k.name, k.doc), ("hz", "Timer interrupts per second."));
//! assert_eq!(k.default_text().as_deref(), Some("1000"));
//! ```
//!
//! From that one declaration come the struct's serde defaults and `Default`, and its key table
//! ([`Options::keys`]), which everything else reads: the scenario's bounds check and its error
//! messages (`hostsim-scenario`'s `bounds.rs`), the fuzzer's generators (`fuzz/`), the key
//! reference of the docs (`docs/src/reference/scenario-keys.md`, generated), and the tests that
//! fail when a key lacks a bound, a generator or documentation.

pub use hostsim_options_macros::options;

// The attribute's code names this crate `::hostsim_options`, also in its own tests.
extern crate self as hostsim_options;

/// What values a key may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    /// A whole number in `min..=max`.
    Int(i64, i64),
    /// A finite number in `min..=max` (integers are accepted).
    Float(f64, f64),
    /// Any finite number.
    Finite,
    /// An array of at most this many elements.
    Len(usize),
}

pub const fn int(min: i64, max: i64) -> Range {
    Range::Int(min, max)
}
pub const fn float(min: f64, max: f64) -> Range {
    Range::Float(min, max)
}
pub const fn finite() -> Range {
    Range::Finite
}
pub const fn len(max: usize) -> Range {
    Range::Len(max)
}

/// One simulated day, the longest time any key may give (simulated time is `u64` ns: sums of a
/// few times cannot come near 2^64, and a run ends in bounded wall time).
pub const DAY_MS: i64 = 86_400_000;
pub const DAY_US: i64 = DAY_MS * 1_000;
pub const DAY_NS: i64 = DAY_US * 1_000;
/// TOML integers are signed 64-bit.
pub const I64_MAX: i64 = i64::MAX;
/// Why the time bounds end where they do.
pub const TIME: &str = "one simulated day at most";
pub const PORT: &str = "a UDP/TCP port";
pub const CPU_ID: &str = "a CPU number; the model has at most 128 CPUs";
pub const NICE: &str = "Linux nice values";

/// How a fuzzer generates a key's value (and what the docs say it is).
#[derive(Clone, Copy, Debug)]
pub enum Gen {
    Int,
    Float,
    Bool,
    Text,
    /// One of these values (as written in a scenario), each with its documentation.
    Choice(&'static [(&'static str, &'static str)]),
    /// A policy's name: Linux's own values, and those the mechanisms add (`Selector::values`).
    Selector(&'static Selector),
    /// A list of CPU numbers.
    Cpus,
    /// A name other keys refer to (a NIC's, a source's).
    Name,
    /// A machine profile's name (`profiles/<name>.toml`).
    Profile,
    /// A list of values.
    List(fn() -> Gen),
    /// A table of its own keys (`[process.accelerator]`; an array of them in a `List`).
    Table(fn() -> &'static [Key]),
}

/// A key whose value names a policy (`kernel.backlog = "pbq"`): Linux's values, declared with
/// the key; a mechanism adds its own (`hostsim_host::hooks::Mechanism`'s `POLICIES`), so a new
/// policy is its mechanism's folder, never an edit here.
#[derive(Debug)]
pub struct Selector {
    /// The key (`backlog`).
    pub key: &'static str,
    /// Linux's own values, each with its documentation.
    pub linux: &'static [(&'static str, &'static str)],
}

/// One declared key.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    /// As written in a scenario.
    pub name: &'static str,
    /// Its documentation (the field's doc comment).
    pub doc: &'static str,
    /// Its Rust type.
    pub ty: &'static str,
    /// A number's range (an array's longest length), and why it ends there.
    pub range: Option<(Range, &'static str)>,
    /// An array's elements' range, and why.
    pub each: Option<(Range, &'static str)>,
    /// Its default as JSON (TOML's scalars and arrays look the same); None: required.
    pub default: Option<fn() -> String>,
    pub gen: fn() -> Gen,
}

impl Key {
    pub fn default_text(&self) -> Option<String> {
        self.default.map(|f| f())
    }
    pub fn required(&self) -> bool {
        self.default.is_none()
    }
}

/// A declared configuration struct.
pub trait Options {
    fn keys() -> &'static [Key];
}

/// A type a key can have, and how its values are generated.
pub trait OptionType {
    fn gen() -> Gen;
}

macro_rules! gen_for {
    ($g:ident: $($t:ty),*) => { $(impl OptionType for $t { fn gen() -> Gen { Gen::$g } })* };
}
gen_for!(Int: u8, u16, u32, u64, i8, i16, i32, i64, usize);
gen_for!(Float: f64, f32);
gen_for!(Bool: bool);
gen_for!(Text: String);

impl<T: OptionType> OptionType for Option<T> {
    fn gen() -> Gen {
        T::gen()
    }
}
impl<T: OptionType> OptionType for Vec<T> {
    fn gen() -> Gen {
        Gen::List(T::gen)
    }
}
impl<T: OptionType, const N: usize> OptionType for [T; N] {
    fn gen() -> Gen {
        Gen::List(T::gen)
    }
}
impl<T: OptionType> OptionType for Box<T> {
    fn gen() -> Gen {
        T::gen()
    }
}

/// A default as the docs show it.
pub fn render<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("<{e}>"))
}

/// A number's allowed values, as messages and the docs say them.
pub fn describe(range: &Range, why: &str) -> String {
    let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
    match range {
        Range::Int(min, max) => format!("a whole number in {}..={}{why}", fmt_int(*min), fmt_int(*max)),
        Range::Float(min, max) => format!("a number in {}..={}{why}", fmt_float(*min), fmt_float(*max)),
        Range::Finite => format!("a finite number{why}"),
        Range::Len(max) => format!("an array of at most {} elements{why}", fmt_int(*max as i64)),
    }
}

/// A step of a key's path in a scenario: a table's key or an array's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    Key(String),
    Index(usize),
}

/// What is wrong with a configuration, and where (`kernel.napi_suppress`, `nic[0].irq_cpus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub at: Vec<At>,
    pub msg: String,
}

impl Fault {
    /// A fault at the key path `keys` (`&["kernel", "backlog"]`).
    pub fn at(keys: &[&str], msg: impl Into<String>) -> Fault {
        Fault { at: keys.iter().map(|k| At::Key(k.to_string())).collect(), msg: msg.into() }
    }
    /// A fault at `field` of element `i` of the array of tables `array` (`nic[0].irq_cpus`).
    pub fn elem(array: &str, i: usize, field: &str, msg: impl Into<String>) -> Fault {
        Fault { at: vec![At::Key(array.into()), At::Index(i), At::Key(field.into())], msg: msg.into() }
    }
}

/// The options `T` declares, read from a table that may hold other declarations' keys too (a
/// `[kernel]` table's mechanisms' keys): the keys of `T` taken from `table`, the others left to
/// their owners; a value of the wrong shape is a [`Fault`] at `table_path` + its key.
pub fn from_table<T: Options + serde::de::DeserializeOwned>(
    table: &std::collections::BTreeMap<String, serde_json::Value>,
    table_path: &[At],
) -> Result<T, Fault> {
    let mut mine = serde_json::Map::new();
    for k in T::keys() {
        if let Some(v) = table.get(k.name) {
            mine.insert(k.name.to_string(), v.clone());
        }
    }
    serde_path_to_error::deserialize(serde_json::Value::Object(mine)).map_err(|e| {
        let mut at = table_path.to_vec();
        for seg in e.path().iter() {
            match seg {
                serde_path_to_error::Segment::Map { key } => at.push(At::Key(key.clone())),
                serde_path_to_error::Segment::Seq { index } => at.push(At::Index(*index)),
                _ => {}
            }
        }
        Fault { at, msg: e.inner().to_string() }
    })
}

/// A number as messages show it: whole numbers like `fmt_int`, `nan`, `inf`.
pub fn fmt_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if f.fract() == 0.0 && f.abs() < 1e15 {
        fmt_int(f as i64)
    } else if f != 0.0 && (f.abs() < 1e-3 || f.abs() >= 1e15) {
        // 1e-300 as `1e-300`, not three hundred zeros.
        format!("{f:e}")
    } else {
        format!("{f}")
    }
}

/// A whole number with `_` every three digits, as TOML allows writing it.
pub fn fmt_int(i: i64) -> String {
    let digits = i.unsigned_abs().to_string();
    if digits.len() <= 5 {
        return i.to_string();
    }
    let mut out = String::new();
    for (n, c) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    if i < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A choice of values, each documented.
    #[options]
    #[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Path {
        /// The old one.
        Legacy,
        /// The new one.
        FlowLimit,
        #[serde(rename = "x-y")]
        Other,
    }

    /// Some options.
    #[options]
    #[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
    #[serde(deny_unknown_fields)]
    struct Opts {
        /// A name nobody may leave out.
        name: String,
        /// CPUs.
        #[option(default = vec![0, 1], bound = len(128), why = "CPUs", each = int(0, 127), each_why = CPU_ID, gen = Gen::Cpus)]
        cpus: Vec<u32>,
        /// The path.
        #[option(default = Path::FlowLimit)]
        path: Path,
        /// Renamed.
        #[serde(rename = "thread")]
        #[option(default = Vec::new())]
        threads: Vec<u8>,
    }

    #[test]
    fn one_declaration_gives_the_defaults_and_the_keys() {
        let o: Opts = serde_json::from_str(r#"{"name": "a"}"#).unwrap();
        assert_eq!((o.cpus, o.path, o.threads), (vec![0, 1], Path::FlowLimit, vec![]));
        assert!(serde_json::from_str::<Opts>("{}").unwrap_err().to_string().contains("missing field `name`"));
        let k = Opts::keys();
        assert_eq!(k.iter().map(|k| k.name).collect::<Vec<_>>(), ["name", "cpus", "path", "thread"]);
        assert!(k[0].required() && !k[1].required());
        assert_eq!(k[1].default_text().as_deref(), Some("[0,1]"));
        assert_eq!(k[2].default_text().as_deref(), Some("\"flow_limit\""));
        assert_eq!(k[1].each, Some((Range::Int(0, 127), CPU_ID)));
        assert!(matches!((k[1].gen)(), Gen::Cpus));
        match (k[2].gen)() {
            Gen::Choice(v) => {
                assert_eq!(v, &[("legacy", "The old one."), ("flow_limit", "The new one."), ("x-y", "")])
            }
            g => panic!("{g:?}"),
        }
        assert!(matches!((k[3].gen)(), Gen::List(_)));
    }

    #[test]
    fn numbers_read_like_toml() {
        assert_eq!(fmt_int(86_400_000), "86_400_000");
        assert_eq!(fmt_int(-1_000_000), "-1_000_000");
        assert_eq!(fmt_int(65_535), "65535");
        assert_eq!(describe(&Range::Int(1, 10_000), "why"), "a whole number in 1..=10000 (why)");
    }
}
