//! Writes the key reference of the docs (`docs/src/reference/scenario-keys.md`) from the keys'
//! declarations (`src/keys.rs`). Run it after declaring, changing or documenting a key:
//!
//! ```sh
//! cargo run -p hostsim-scenario --example scenario_keys
//! ```

use hostsim_scenario::keys::{reference, REFERENCE_PATH};
use std::path::Path;

fn main() -> std::io::Result<()> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(REFERENCE_PATH);
    let text = reference();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, &text)?;
    println!("wrote {} ({} lines)", path.display(), text.lines().count());
    Ok(())
}
