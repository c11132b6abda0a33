//! What every `hostsim live <experiment>` command shares: its options struct is the run's
//! configuration, declared once with `clap` and passed to the run as it is.
//!
//! An experiment's options are one struct (`<paper id>::Options`) deriving [`clap::Args`] and
//! [`serde::Serialize`]. Each field is a flag with its default, its `--quick` value
//! (`default_value_if("quick", "true", …)`) and its range (a value parser: [`f64_in`],
//! `clap::value_parser!(u32).range(…)`), or a fixed parameter of the experiment
//! (`#[arg(skip = …)]`) that the run reads and records. Nothing re-declares them: [`run`] starts
//! the harness, writes the struct as `run.json`'s `config` and hands it to the experiment.
//!
//! ```text
//!   hostsim live ozaki-pbq --rates 1e6 --out DIR
//!     → clap: ozaki_pbq::Options (defaults, --quick values, ranges checked: exit 2 on a bad value)
//!     → command::run(&options): LiveRun::start, run.json {"config": options, "points": …}
//!     → Experiment::run(&options, &mut run) → LiveRun::finish
//! ```

use crate::harness::{progress, LiveError, LiveRun};
use std::path::{Path, PathBuf};

/// The options every experiment has.
#[derive(clap::Args, Clone, Debug, serde::Serialize)]
pub struct Common {
    /// Directory for results.csv (written point by point) and run.json.
    #[arg(long, value_name = "DIR")]
    #[serde(skip)]
    pub out: PathBuf,
    /// The short run of the tests: every option's `--quick` value (in its help) instead of its
    /// default.
    #[arg(long)]
    pub quick: bool,
    /// Repetitions of the whole sweep [--quick: 1].
    #[arg(long, default_value_t = 3, default_value_if("quick", "true", "1"),
          value_parser = clap::value_parser!(u32).range(1..=20))]
    pub reps: u32,
}

/// A live experiment: its options are its configuration.
pub trait Experiment: serde::Serialize {
    /// The command (`hostsim live <NAME>`), the run's name in run.json and in progress lines.
    const NAME: &'static str;

    fn common(&self) -> &Common;

    /// Points the run will measure (all repetitions).
    fn points(&self) -> usize;

    /// What a point is and where it runs, for the run's first progress line.
    fn plan(&self) -> String;

    /// The sweep, each point pushed to `run` as it is measured; `run` is finished by the caller.
    fn run(&self, run: &mut LiveRun) -> Result<(), LiveError>;
}

/// `hostsim live <experiment> --out DIR`: start the harness in DIR, record the options and the
/// number of points in run.json, run the sweep, and finish (undo everything, final status).
pub fn run<E: Experiment>(e: &E) -> Result<(), LiveError> {
    let out = &e.common().out;
    let mut run = LiveRun::start(E::NAME, out)?;
    let points = e.points();
    run.set_info("points", points.into());
    run.set_info("config", serde_json::to_value(e).expect("options serialise"));
    run.progress(format!(
        "hostsim live {} ({}): {points} points, {} -> {}",
        E::NAME,
        run.name(),
        e.plan(),
        results(out).display()
    ));
    let outcome = e.run(&mut run);
    let n = run.points().len();
    run.finish(outcome)?;
    progress(format!("{n} points -> {}", results(out).display()));
    Ok(())
}

fn results(out: &Path) -> PathBuf {
    out.join("results.csv")
}

/// Flags that moved, as (command, old flag, new flag): the old name still works, with a
/// deprecation notice (`hostsim live ozaki-pbq --modes` was the only command whose variants
/// were not `--variants`).
pub const RENAMED: &[(&str, &str, &str)] = &[("ozaki-pbq", "--modes", "--variants")];

/// The command line (`hostsim live <command> ...`) with every renamed flag under its new name,
/// and a deprecation notice for each (`--old VALUE` and `--old=VALUE`; nothing after `--`).
pub fn rename_flags(args: Vec<std::ffi::OsString>) -> (Vec<std::ffi::OsString>, Vec<String>) {
    let mut notices = Vec::new();
    let command = match (args.get(1).and_then(|a| a.to_str()), args.get(2).and_then(|a| a.to_str())) {
        (Some("live"), Some(c)) => c.to_string(),
        _ => return (args, notices),
    };
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for (i, a) in args.into_iter().enumerate() {
        let text = a.to_str().map(str::to_string);
        rest |= i > 2 && text.as_deref() == Some("--");
        let renamed = (i > 2 && !rest)
            .then(|| {
                let t = text.as_deref()?;
                RENAMED.iter().filter(|(c, _, _)| *c == command).find_map(|(_, old, new)| {
                    let tail = t.strip_prefix(old).filter(|tail| tail.is_empty() || tail.starts_with('='))?;
                    notices.push(format!("`hostsim live {command} {old}` is deprecated: use {new} (same values)"));
                    Some(format!("{new}{tail}"))
                })
            })
            .flatten();
        out.push(renamed.map_or(a, Into::into));
    }
    (out, notices)
}

/// A value parser for a finite number in `lo..=hi`; its error names the range and the unit.
pub fn f64_in(lo: f64, hi: f64, unit: &'static str) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s: &str| {
        let x: f64 = s.trim().parse().map_err(|e| format!("`{s}` is not a number: {e}"))?;
        if x.is_finite() && (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(format!("expected {lo}..={hi} {unit}, got {s}"))
        }
    }
}

/// A value parser for a positive, finite number up to `hi` (a rate, a capacity: 0 is no rate).
pub fn positive_up_to(hi: f64, unit: &'static str) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s: &str| {
        let x: f64 = s.trim().parse().map_err(|e| format!("`{s}` is not a number: {e}"))?;
        if x.is_finite() && x > 0.0 && x <= hi {
            Ok(x)
        } else {
            Err(format!("expected a number in (0, {hi}] {unit}, got {s}"))
        }
    }
}

/// Serialise a value as its `Debug` text (a parameter struct of another crate, for run.json).
pub fn as_debug<T: std::fmt::Debug, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:?}"))
}

/// An option's closed set of values, declared once: the enum, each value's name (on the command
/// line, in run.json and in results.csv), its help (the variant's doc comment), `ALL`, `name`,
/// `parse`, clap's `ValueEnum` and serde's `Serialize` (as the name).
#[macro_export]
macro_rules! named_values {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[doc = $doc:literal])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $( $(#[doc = $doc])* $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value's name (command line, run.json, results.csv).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value named `s`.
            pub fn parse(s: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.name() == s)
            }
        }

        impl clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                let help = match self {
                    $($name::$variant => concat!("" $(, $doc)*)),+
                };
                Some(clap::builder::PossibleValue::new(self.name()).help(help.trim()))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}

/// Parse `args` (after the command's name) into options `T` as the command line does: for
/// tests, and for a default configuration (`parse::<T>(&["--out", DIR])`).
pub fn parse<T: clap::Args + clap::FromArgMatches>(args: &[&str]) -> Result<T, clap::Error> {
    let cmd = T::augment_args(clap::Command::new("hostsim-live").no_binary_name(true));
    let m = cmd.try_get_matches_from(args)?;
    T::from_arg_matches(&m)
}

/// The experiments' option tests: parse as the command line does, after `--out d`.
#[cfg(test)]
pub(crate) mod testing {
    /// An experiment's options from `args` (after `--out d`), or clap's error as text.
    pub fn options<T: clap::Args + clap::FromArgMatches>(args: &[&str]) -> Result<T, String> {
        let all: Vec<&str> = ["--out", "d"].iter().chain(args).copied().collect();
        super::parse::<T>(&all).map_err(|e| e.to_string())
    }

    /// Each command line of `bad` is refused, and the error names its first flag.
    pub fn assert_refused<T: clap::Args + clap::FromArgMatches + std::fmt::Debug>(bad: &[&[&str]]) {
        for args in bad {
            let e = options::<T>(args).expect_err(&format!("{args:?} was accepted"));
            let flag = args[0].split('=').next().unwrap_or_default();
            assert!(e.contains(flag), "{args:?}: the error does not name {flag}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Args, Debug, serde::Serialize)]
    struct Opts {
        #[command(flatten)]
        #[serde(flatten)]
        common: Common,
        /// A window.
        #[arg(long, default_value_t = 2.0, default_value_if("quick", "true", "0.5"),
              value_parser = f64_in(0.1, 60.0, "s"))]
        window_s: f64,
        #[arg(long = "rates", value_delimiter = ',', default_value = "1,2,3",
              default_value_if("quick", "true", "7"), value_parser = positive_up_to(1e6, "pkt/s"))]
        rates_pps: Vec<f64>,
        #[arg(long, value_delimiter = ',', value_enum, default_value = "a,b-b")]
        kinds: Vec<Kind>,
        #[arg(skip = 4u32)]
        fixed: u32,
    }

    named_values! {
        enum Kind {
            /// The first.
            A = "a",
            /// The second.
            B = "b-b",
        }
    }

    #[test]
    fn defaults_quick_values_and_explicit_values_in_that_order() {
        let o: Opts = parse(&["--out", "x"]).unwrap();
        assert_eq!((o.common.reps, o.window_s, o.rates_pps.clone(), o.fixed), (3, 2.0, vec![1.0, 2.0, 3.0], 4));
        let o: Opts = parse(&["--out", "x", "--quick"]).unwrap();
        assert_eq!((o.common.reps, o.window_s, o.rates_pps.clone()), (1, 0.5, vec![7.0]), "--quick's values");
        let o: Opts = parse(&["--out", "x", "--quick", "--reps", "2", "--rates", "5,6"]).unwrap();
        assert_eq!((o.common.reps, o.window_s, o.rates_pps), (2, 0.5, vec![5.0, 6.0]), "a given value wins");
    }

    #[test]
    fn ranges_are_checked_where_the_options_are_parsed() {
        for bad in [&["--window-s", "0.05"][..], &["--window-s", "nan"], &["--rates", "1,0"], &["--reps", "21"]] {
            let mut args = vec!["--out", "x"];
            args.extend_from_slice(bad);
            let e = parse::<Opts>(&args).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}: {e}");
        }
        let e = parse::<Opts>(&["--out", "x", "--window-s", "61"]).unwrap_err().to_string();
        assert!(e.contains("--window-s") && e.contains("expected 0.1..=60 s, got 61"), "{e}");
        let e = parse::<Opts>(&["--out", "x", "--kinds", "c"]).unwrap_err().to_string();
        assert!(e.contains("[possible values: a, b-b]"), "{e}");
    }

    #[test]
    fn a_renamed_flag_is_read_under_its_new_name_with_a_notice() {
        let os = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let (args, notes) = rename_flags(os(&["hostsim", "live", "ozaki-pbq", "--modes", "on,off", "--out", "d"]));
        assert_eq!(args, os(&["hostsim", "live", "ozaki-pbq", "--variants", "on,off", "--out", "d"]));
        assert_eq!(notes, ["`hostsim live ozaki-pbq --modes` is deprecated: use --variants (same values)"]);
        let (args, notes) = rename_flags(os(&["hostsim", "live", "ozaki-pbq", "--modes=on"]));
        assert_eq!((args, notes.len()), (os(&["hostsim", "live", "ozaki-pbq", "--variants=on"]), 1));
        // Another command's flag of that name, a longer flag, and anything after `--` stay.
        for v in [
            &["hostsim", "live", "pbq", "--modes", "x"][..],
            &["hostsim", "live", "ozaki-pbq", "--modes-x"],
            &["hostsim", "live", "ozaki-pbq", "--", "--modes"],
            &["hostsim", "run", "--modes"],
        ] {
            let (args, notes) = rename_flags(os(v));
            assert_eq!((args, notes.len()), (os(v), 0), "{v:?}");
        }
    }

    #[test]
    fn named_values_are_named_once() {
        assert_eq!(Kind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>(), ["a", "b-b"]);
        assert_eq!(Kind::parse("b-b"), Some(Kind::B));
        assert_eq!(Kind::parse("B"), None);
        let o: Opts = parse(&["--out", "x", "--kinds", "b-b,a"]).unwrap();
        assert_eq!(o.kinds, [Kind::B, Kind::A]);
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(v["kinds"], serde_json::json!(["b-b", "a"]));
        assert_eq!(v["rates_pps"], serde_json::json!([1.0, 2.0, 3.0]));
        assert_eq!(v["reps"], 3, "the common options flattened into the record");
        assert!(v.get("out").is_none(), "the output directory is the run's, not its configuration");
        use clap::ValueEnum;
        assert_eq!(Kind::A.to_possible_value().unwrap().get_help().unwrap().to_string(), "The first.");
    }
}
