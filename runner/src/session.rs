//! TEMPORARY, branch sandbox-runner only: stands in for the lead's interpreter session so that
//! the runner binary compiles before main's library lands. Deleted before merging main.

use crate::api::{RunOptions, ToolHost};
use ptc_shared::{Step, Value};

pub(crate) fn execute(source: &str, _opts: &RunOptions, _tools: &[String], _host: &mut dyn ToolHost) -> Step {
    Step { return_value: Some(Value::string(source)), ..Step::default() }
}
