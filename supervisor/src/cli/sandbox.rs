//! The embedded engine behind `ptc run` (no daemon): policy selection and one execution.

use ptc_shared::Step;
use ptc_supervisor::client::{Client, Embedded, Run};
use ptc_supervisor::engine::EngineConfig;
use ptc_supervisor::policy::{Policy, PolicySource};
use std::collections::BTreeMap;
use std::path::Path;

/// The policies to run with, and the chosen one: `--policy` is a name among the policies (built
/// in, or the override directory's), or a path to a policy file (added under its file name).
pub fn policies_for(policy: Option<&str>) -> Result<(BTreeMap<String, Policy>, String), String> {
    let source = PolicySource::from_env();
    let mut policies = source.load().map_err(|e| e.to_string())?;
    let chosen = match policy {
        None => "default".to_string(),
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
    Ok((policies, chosen))
}

/// Runs one request through an in-process engine.
pub fn run_embedded(config: EngineConfig, run: Run) -> Result<Step, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async {
        let client =
            Client::embedded_with(config).map_err(|e| format!("cannot start the sandbox: {e}"))?;
        Ok(match client.run(run).await {
            Ok(s) | Err(s) => s,
        })
    })
}
