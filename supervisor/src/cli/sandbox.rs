//! The embedded engine behind `ptc run` (no daemon): policy selection.

use ptc_supervisor::policy::{Policy, PolicySource};
use std::collections::BTreeMap;
use std::path::Path;

/// The policies to run with, and the one `--policy` chose: a name among the policies (built in,
/// or the override directory's), or a path to a policy file (added under its file name). `None`
/// leaves the choice to the engine's default.
pub fn policies_for(
    policy: Option<&str>,
) -> Result<(BTreeMap<String, Policy>, Option<String>), String> {
    let source = PolicySource::from_env();
    let mut policies = source.load().map_err(|e| e.to_string())?;
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
            "no policy named `{chosen}` in {source} (known: {})",
            known.join(", ")
        ));
    }
    Ok((policies, Some(chosen)))
}
