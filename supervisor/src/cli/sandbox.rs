//! The embedded engine behind `ptc run` (no daemon): policy selection.

use ptc_supervisor::policy::{Policy, load_dir};
use std::collections::BTreeMap;
use std::path::Path;

/// The policies to run with, and the one `--policy` chose: a name in the policies directory,
/// or a path to a policy file (which is added under its file name). `None` leaves the choice
/// to the engine's default.
pub fn policies_for(
    policy: Option<&str>,
) -> Result<(BTreeMap<String, Policy>, Option<String>), String> {
    let dir = ptc_supervisor::installed::default_policies_dir();
    let mut policies = load_dir(&dir).map_err(|e| e.to_string())?;
    let chosen = match policy {
        None => return Ok((policies, None)),
        Some(p) if p.ends_with(".toml") || Path::new(p).is_file() => {
            let loaded = Policy::load(Path::new(p)).map_err(|e| e.to_string())?;
            let name = loaded.name.clone();
            policies.insert(name.clone(), loaded);
            name
        }
        Some(name) => name.to_string(),
    };
    if !policies.contains_key(&chosen) {
        let known: Vec<&str> = policies.keys().map(String::as_str).collect();
        return Err(format!(
            "no policy named `{chosen}` in {} (known: {})",
            dir.display(),
            known.join(", ")
        ));
    }
    Ok((policies, Some(chosen)))
}
