//! Python objects <-> ptc `Value`s, and a `Step` as a Python dict.
//!
//! Into ptc: `None bool int float str dict list tuple set frozenset` (ints must fit 64 bits, dict
//! keys convert like values). Anything else is a `ConversionError` naming where it was found,
//! e.g. `context['orders'][2]['when']: cannot convert datetime`. Nesting is bounded by
//! [`MAX_DEPTH`] (also what stops a list that contains itself).
//!
//! Out of ptc: keywords become strings (`:open` -> `"open"`), lists and vectors become lists,
//! sets become sets. Python needs hashable keys, so a collection used as a map key or a set
//! element becomes a tuple (a set a frozenset; a map is printed as PTC-Lisp text). Values from
//! ptc are depth-bounded where they were decoded, so the walk out cannot run away.

use ptc_shared::value::{MAX_DEPTH, Map, Set, pr_str};
use ptc_shared::{Step, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple};

/// One step of the path to a value that did not convert.
enum Seg<'py> {
    Index(usize),
    Key(Bound<'py, PyAny>),
}

/// Why a Python object did not convert: where, and what.
#[derive(Debug)]
pub struct ConvertError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Converts `obj` to a ptc value; `root` names it in errors (`context`, `result of tool x`).
pub fn to_value(obj: &Bound<'_, PyAny>, root: &str) -> Result<Value, ConvertError> {
    let mut path = Vec::new();
    to_value_at(obj, &mut path).map_err(|message| ConvertError {
        path: render_path(root, &path),
        message,
    })
}

fn render_path(root: &str, path: &[Seg<'_>]) -> String {
    let mut out = root.to_string();
    for seg in path {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) => {
                let repr = k.repr().map(|r| r.to_string());
                out.push_str(&format!("[{}]", repr.unwrap_or_else(|_| "?".into())));
            }
        }
    }
    out
}

/// On error, `path` is left pointing at the offending value.
fn to_value_at<'py>(obj: &Bound<'py, PyAny>, path: &mut Vec<Seg<'py>>) -> Result<Value, String> {
    if path.len() > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| "int out of the 64-bit range".to_string());
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return s.to_cow().map(Value::string).map_err(|e| e.to_string());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return dict_to_value(d, path);
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return seq_to_value(obj, path).map(Value::Vector);
    }
    if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
        let items = seq_to_value(obj, path)?;
        return Ok(Value::Set(Box::new(items.into_iter().collect::<Set>())));
    }
    Err(format!(
        "cannot convert {} (ptc takes None, bool, int, float, str, dict, list, tuple, set)",
        type_name(obj)
    ))
}

fn dict_to_value<'py>(d: &Bound<'py, PyDict>, path: &mut Vec<Seg<'py>>) -> Result<Value, String> {
    let mut map = Map::with_capacity(d.len());
    for (k, v) in d.iter() {
        path.push(Seg::Key(k.clone()));
        let key = to_value_at(&k, path).map_err(|e| format!("key: {e}"))?;
        let val = to_value_at(&v, path)?;
        path.pop();
        map.insert(key, val);
    }
    Ok(Value::Map(Box::new(map)))
}

fn seq_to_value<'py>(
    obj: &Bound<'py, PyAny>,
    path: &mut Vec<Seg<'py>>,
) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (i, item) in obj.try_iter().map_err(|e| e.to_string())?.enumerate() {
        let item = item.map_err(|e| e.to_string())?;
        path.push(Seg::Index(i));
        out.push(to_value_at(&item, path)?);
        path.pop();
    }
    Ok(out)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj.get_type();
    let module = ty.module().map(|m| m.to_string()).unwrap_or_default();
    let name = ty.qualname().map(|n| n.to_string()).unwrap_or_default();
    if module.is_empty() || module == "builtins" {
        name
    } else {
        format!("{module}.{name}")
    }
}

/// A ptc value as plain Python data.
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Nil => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) | Value::Keyword(s) => PyString::new(py, s).into_any(),
        Value::Vector(xs) | Value::List(xs) => {
            let items = xs
                .iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Map(m) => {
            let d = PyDict::new(py);
            for (k, x) in m.iter() {
                d.set_item(key_to_py(py, k)?, to_py(py, x)?)?;
            }
            d.into_any()
        }
        Value::Set(s) => {
            let items = s
                .iter()
                .map(|x| key_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PySet::new(py, items)?.into_any()
        }
    })
}

/// A ptc value as a hashable Python object (for dict keys and set elements).
fn key_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Vector(xs) | Value::List(xs) => {
            let items = xs
                .iter()
                .map(|x| key_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        Value::Set(s) => {
            let items = s
                .iter()
                .map(|x| key_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyFrozenSet::new(py, items)?.into_any()
        }
        Value::Map(_) => PyString::new(py, &pr_str(v)).into_any(),
        other => to_py(py, other)?,
    })
}

/// JSON (the trace's form) as plain Python data.
pub fn json_to_py<'py>(py: Python<'py>, j: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value as J;
    Ok(match j {
        J::Null => py.None().into_bound(py),
        J::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
        },
        J::String(s) => PyString::new(py, s).into_any(),
        J::Array(xs) => {
            let items = xs
                .iter()
                .map(|x| json_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        J::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// The Step as a dict with the keys of `Step::to_json` (values converted directly, so floats
/// stay floats even when not finite), plus `fail.system_reason` (the typed reason, which picks
/// the Python exception) and `memory_native` (the exact memory, keywords included, for the next
/// run).
pub fn step_to_py<'py>(py: Python<'py>, step: &Step) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let ret = step
        .return_value
        .as_ref()
        .map(|v| to_py(py, v))
        .transpose()?;
    d.set_item("return", ret)?;
    d.set_item(
        "fail",
        step.fail.as_ref().map(|f| fail_to_py(py, f)).transpose()?,
    )?;
    d.set_item("memory", to_py(py, &step.memory)?)?;
    d.set_item("memory_native", crate::NativeValue(step.memory.clone()))?;
    d.set_item("memory_delta", to_py(py, &step.memory_delta)?)?;
    d.set_item("history", to_py(py, &Value::Vector(step.history.clone()))?)?;
    d.set_item("signature", step.signature.clone())?;
    d.set_item("prints", step.prints.clone())?;
    d.set_item("warnings", step.warnings.clone())?;
    let calls = step.tool_calls.iter().map(|c| {
        let t = PyDict::new(py);
        t.set_item("name", &c.name)?;
        t.set_item("args", to_py(py, &c.args)?)?;
        t.set_item(
            "result",
            c.result.as_ref().map(|v| to_py(py, v)).transpose()?,
        )?;
        t.set_item("error", c.error.clone())?;
        t.set_item("duration_us", c.duration_us)?;
        Ok(t)
    });
    d.set_item("tool_calls", calls.collect::<PyResult<Vec<_>>>()?)?;
    let usage = serde_json::to_value(&step.usage).unwrap_or(serde_json::Value::Null);
    d.set_item("usage", json_to_py(py, &usage)?)?;
    let trace = step.trace.iter().map(|t| json_to_py(py, &t.to_json()));
    d.set_item("trace", trace.collect::<PyResult<Vec<_>>>()?)?;
    Ok(d)
}

fn fail_to_py<'py>(py: Python<'py>, f: &ptc_shared::Fail) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("reason", f.reason_name())?;
    d.set_item("kind", f.kind_name())?;
    d.set_item("system_reason", f.reason.as_str())?;
    d.set_item("message", &f.message)?;
    d.set_item("op", f.op.clone())?;
    d.set_item("details", to_py(py, &f.details)?)?;
    Ok(d)
}
