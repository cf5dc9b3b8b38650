//! Destructuring patterns: `[a b & more :as all]`, `{:keys [a] :strs [b] :or {a 1} :as m}`,
//! `{n :name}`, nested to any depth. Each binding gets a frame slot.

use super::{AResult, Analyzer, err};
use crate::analyze::expr::{MapEntryPat, Pattern};
use crate::reader::{Form, FormKind};
use crate::value::Value;
use std::rc::Rc;

impl Analyzer<'_> {
    /// Compiles a binding form into a pattern, binding its names in the current scope.
    pub(crate) fn pattern(&mut self, f: &Form) -> AResult<Pattern> {
        match &f.kind {
            FormKind::Symbol(s) if !s.contains('/') || &**s == "/" => {
                Ok(Pattern::Bind(self.bind_local(s)))
            }
            FormKind::Vector(items) => self.seq_pattern(items),
            FormKind::Map(items) => self.map_pattern(items, f),
            _ => Err(err(
                f.pos,
                format!("cannot bind to {}", f.describe()),
                Some("bind a symbol, a [vector] or a {map} pattern".into()),
            )),
        }
    }

    fn seq_pattern(&mut self, items: &[Form]) -> AResult<Pattern> {
        let mut out = Vec::new();
        let mut rest = None;
        let mut as_slot = None;
        let mut i = 0;
        while i < items.len() {
            let f = &items[i];
            if f.is_sym("&") {
                let r = items
                    .get(i + 1)
                    .ok_or_else(|| err(f.pos, "`&` needs a name after it", None))?;
                rest = Some(Box::new(self.pattern(r)?));
                i += 2;
            } else if matches!(&f.kind, FormKind::Keyword(k) if &**k == "as") {
                let name = items
                    .get(i + 1)
                    .and_then(Form::as_sym)
                    .ok_or_else(|| err(f.pos, ":as needs a name", None))?;
                as_slot = Some(self.bind_local(name));
                i += 2;
            } else {
                out.push(self.pattern(f)?);
                i += 1;
            }
        }
        Ok(Pattern::Seq {
            items: out,
            rest,
            as_slot,
        })
    }

    fn map_pattern(&mut self, items: &[Form], whole: &Form) -> AResult<Pattern> {
        // :or is read first so defaults are known when the names are bound.
        let defaults = or_defaults(items)?;
        let mut entries = Vec::new();
        // `:as` is bound first (as in Clojure): `:or` defaults may read it.
        let mut as_slot = None;
        for pair in items.chunks(2) {
            if let [k, v] = pair
                && matches!(&k.kind, FormKind::Keyword(kw) if &**kw == "as")
            {
                let name = v
                    .as_sym()
                    .ok_or_else(|| err(v.pos, ":as needs a name", None))?;
                as_slot = Some(self.bind_local(name));
            }
        }
        for pair in items.chunks(2) {
            let [k, v] = pair else {
                return Err(err(whole.pos, "map pattern needs key/value pairs", None));
            };
            match &k.kind {
                FormKind::Keyword(kw) if matches!(&**kw, "keys" | "strs" | "syms") => {
                    let FormKind::Vector(names) = &v.kind else {
                        return Err(err(v.pos, format!(":{kw} needs a vector of names"), None));
                    };
                    for n in names {
                        let name = n.as_sym().or_else(|| match &n.kind {
                            FormKind::Keyword(k) => Some(&**k),
                            _ => None,
                        });
                        let name = name.ok_or_else(|| {
                            err(n.pos, format!(":{kw} names must be symbols"), None)
                        })?;
                        let local = name.rsplit('/').next().unwrap_or(name);
                        let key = match &**kw {
                            "keys" => Value::kw(name),
                            "strs" => Value::str(name),
                            _ => Value::Symbol(crate::value::Text::from(name)),
                        };
                        let default = self.default_for(local, &defaults)?;
                        let pattern = Pattern::Bind(self.bind_local(local));
                        entries.push(MapEntryPat {
                            key,
                            pattern,
                            default,
                        });
                    }
                }
                FormKind::Keyword(kw) if &**kw == "as" || &**kw == "or" => {}
                _ => {
                    let key = super::forms::quote(v);
                    let default = match k.as_sym() {
                        Some(n) => self.default_for(n, &defaults)?,
                        None => None,
                    };
                    let pattern = self.pattern(k)?;
                    entries.push(MapEntryPat {
                        key,
                        pattern,
                        default,
                    });
                }
            }
        }
        Ok(Pattern::Map { entries, as_slot })
    }

    fn default_for(
        &mut self,
        name: &str,
        defaults: &[(Rc<str>, &Form)],
    ) -> AResult<Option<super::Expr>> {
        match defaults.iter().find(|(n, _)| &**n == name) {
            Some((_, f)) => Ok(Some(self.analyze(f, false)?)),
            None => Ok(None),
        }
    }
}

/// A map pattern's `:or` defaults, by name (none without `:or`).
fn or_defaults(items: &[Form]) -> AResult<Vec<(Rc<str>, &Form)>> {
    let mut defaults = Vec::new();
    for pair in items.chunks(2) {
        if let [k, v] = pair
            && matches!(&k.kind, FormKind::Keyword(kw) if &**kw == "or")
        {
            let FormKind::Map(ds) = &v.kind else {
                return Err(err(v.pos, ":or needs a map of defaults", None));
            };
            for d in ds.chunks(2) {
                if let [name, dv] = d {
                    let n = name
                        .as_sym()
                        .ok_or_else(|| err(name.pos, ":or keys must be symbols", None))?;
                    defaults.push((Rc::from(n), dv));
                }
            }
        }
    }
    Ok(defaults)
}
