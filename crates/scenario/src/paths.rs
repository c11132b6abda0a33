//! Key paths into a scenario document: setting values (`--set`, sweeps, variants) and finding
//! the line a key is on (for error messages).
//!
//! A path is dotted. Arrays of tables (`[[process]]`, `[[nic]]`, `[[traffic]]`) are addressed by
//! an element's `name` (`process.sink.nice`) or by index (`process.0.nice`).

use toml::{Table, Value};

/// Parse a command-line value: TOML syntax if it parses (`5`, `true`, `"napi"`, `[0, 1]`), else a
/// bare string (`napi`).
pub fn parse_value(s: &str) -> Value {
    match format!("v = {s}").parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(s.to_string())),
        Err(_) => Value::String(s.to_string()),
    }
}

/// Set `path` to `value` in `doc`. Missing intermediate tables are created; an array element
/// must exist.
pub fn set_path(doc: &mut Table, path: &str, value: Value) -> Result<(), String> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(format!("`{path}` is not a valid key path (empty segment)"));
    }
    let mut table = doc;
    let mut i = 0;
    while i < segs.len() - 1 {
        let seg = segs[i];
        let entry = table.entry(seg.to_string()).or_insert_with(|| Value::Table(Table::new()));
        table = match entry {
            Value::Table(t) => t,
            Value::Array(arr) => {
                i += 1;
                let sel = segs[i];
                if i == segs.len() - 1 {
                    return Err(format!("`{path}` names an element of `{seg}` but no key inside it"));
                }
                let idx = find_elem(arr, sel).ok_or_else(|| {
                    let names: Vec<String> =
                        arr.iter().filter_map(|e| e.get("name").and_then(|n| n.as_str()).map(str::to_string)).collect();
                    format!("no `[[{seg}]]` named `{sel}` (have: {})", names.join(", "))
                })?;
                match &mut arr[idx] {
                    Value::Table(t) => t,
                    _ => return Err(format!("`{seg}.{sel}` is not a table")),
                }
            }
            _ => return Err(format!("`{}` is a value, not a table", segs[..=i].join("."))),
        };
        i += 1;
    }
    table.insert(segs[segs.len() - 1].to_string(), value);
    Ok(())
}

/// The segments a dotted `path` (as given to [`set_path`]) names in `doc`, with array elements
/// named by `name` resolved to their index: `traffic.load.rate_pps` → `traffic`, `[0]`,
/// `rate_pps`. Parts that are not in `doc` are kept as keys.
pub fn resolve(doc: &Table, path: &str) -> Vec<Seg> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut out = Vec::with_capacity(parts.len());
    let mut table = Some(doc);
    let mut i = 0;
    while i < parts.len() {
        out.push(Seg::Key(parts[i].to_string()));
        table = match table.and_then(|t| t.get(parts[i])) {
            Some(Value::Table(t)) => Some(t),
            Some(Value::Array(arr)) if i + 1 < parts.len() => {
                i += 1;
                match find_elem(arr, parts[i]) {
                    Some(idx) => {
                        out.push(Seg::Index(idx));
                        arr[idx].as_table()
                    }
                    None => {
                        out.push(Seg::Key(parts[i].to_string()));
                        None
                    }
                }
            }
            _ => None,
        };
        i += 1;
    }
    out
}

fn find_elem(arr: &[Value], sel: &str) -> Option<usize> {
    arr.iter()
        .position(|e| e.get("name").and_then(|n| n.as_str()) == Some(sel))
        .or_else(|| sel.parse::<usize>().ok().filter(|&i| i < arr.len()))
}

/// A segment of a located path.
#[derive(Clone, Debug, PartialEq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Byte span of the key (or value) at `segs` in `src`, for error messages. Tries the longest
/// prefix that exists.
pub fn locate(src: &str, segs: &[Seg]) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(src.to_string()).ok()?;
    let mut best = None;
    let mut item: &toml_edit::Item = doc.as_item();
    for seg in segs {
        let next = match seg {
            Seg::Key(k) => {
                if let Some(t) = item.as_table_like() {
                    if let Some((key, _)) = t.get_key_value(k) {
                        if let Some(sp) = key.span() {
                            best = Some(sp.start);
                        }
                    }
                    t.get(k)
                } else {
                    None
                }
            }
            Seg::Index(i) => match item {
                toml_edit::Item::ArrayOfTables(a) => {
                    let t = a.get(*i);
                    if let Some(sp) = t.and_then(|t| t.span()) {
                        best = Some(sp.start);
                    }
                    t.map(|_| &item[*i])
                }
                toml_edit::Item::Value(toml_edit::Value::Array(a)) => {
                    if let Some(sp) = a.get(*i).and_then(|v| v.span()) {
                        best = Some(sp.start);
                    }
                    a.get(*i).map(|_| &item[*i])
                }
                _ => None,
            },
        };
        match next {
            Some(n) => item = n,
            None => break,
        }
    }
    best
}

/// Convert a serde_path_to_error path to segments.
pub fn segs_of(path: &serde_path_to_error::Path) -> Vec<Seg> {
    path.iter()
        .filter_map(|s| match s {
            serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

/// Render segments as `process[1].nice`.
pub fn render(segs: &[Seg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                // A key that is itself dotted (`"traffic.load.rate_pps"`) is quoted, as in TOML.
                if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                    s.push_str(&format!("{k:?}"));
                } else {
                    s.push_str(k);
                }
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_by_name_and_index() {
        let mut t: Table = "[[process]]\nname = \"a\"\nnice = 0\n[[process]]\nname = \"b\"\n".parse().unwrap();
        set_path(&mut t, "process.b.nice", Value::Integer(5)).unwrap();
        set_path(&mut t, "process.0.nice", Value::Integer(-3)).unwrap();
        set_path(&mut t, "kernel.rx_path", parse_value("napi")).unwrap();
        assert_eq!(t["process"][1]["nice"].as_integer(), Some(5));
        assert_eq!(t["process"][0]["nice"].as_integer(), Some(-3));
        assert_eq!(t["kernel"]["rx_path"].as_str(), Some("napi"));
        assert!(set_path(&mut t, "process.zz.nice", Value::Integer(1))
            .unwrap_err()
            .contains("no `[[process]]` named `zz`"));
    }

    #[test]
    fn resolve_names_to_indices() {
        let t: Table = "[[traffic]]\nname = \"a\"\n[[traffic]]\nname = \"b\"\n[kernel]\nhz = 1\n".parse().unwrap();
        let k = |s: &str| Seg::Key(s.into());
        assert_eq!(resolve(&t, "traffic.b.rate_pps"), vec![k("traffic"), Seg::Index(1), k("rate_pps")]);
        assert_eq!(resolve(&t, "traffic.0.flows"), vec![k("traffic"), Seg::Index(0), k("flows")]);
        assert_eq!(resolve(&t, "kernel.bogus"), vec![k("kernel"), k("bogus")]);
        assert_eq!(resolve(&t, "traffic.zz.flows"), vec![k("traffic"), k("zz"), k("flows")]);
    }

    #[test]
    fn locate_lines() {
        let src = "a = 1\n[[process]]\nname = \"x\"\nnice = 3\n";
        let off = locate(src, &[Seg::Key("process".into()), Seg::Index(0), Seg::Key("nice".into())]).unwrap();
        assert_eq!(crate::error::line_of(src, off), 4);
    }

    #[test]
    fn values() {
        assert_eq!(parse_value("5"), Value::Integer(5));
        assert_eq!(parse_value("napi"), Value::String("napi".into()));
        assert_eq!(parse_value("[1, 2]"), Value::Array(vec![Value::Integer(1), Value::Integer(2)]));
    }
}
