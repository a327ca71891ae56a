//! Flink's JSON functions' value-level work, over `serde_json`'s parser:
//! SQL/JSON paths (JSON_VALUE, JSON_EXISTS, JSON_QUERY with its wrappers
//! and ON EMPTY / ON ERROR behaviours), `IS JSON` and its kinds, and the
//! JSON text of SQL values for JSON_OBJECT, JSON_ARRAY and JSON_STRING,
//! with objects keeping their members in the order written as Flink's
//! Jackson nodes do.

use crate::time::{civil_from_days, timestamp_parts};

/// One step of a SQL/JSON path: an object member or an array element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonStep {
    /// `.key`, `."key"` or `['key']`.
    Key(String),
    /// `[n]` (0-based).
    Index(usize),
}

/// Parses a SQL/JSON path as Flink's JSON functions take it: an optional
/// `lax` or `strict` mode (JSON_VALUE and JSON_EXISTS read both alike: a
/// path that leads nowhere gives nothing, not an error; JSON_QUERY tells
/// them apart with [`json_path_is_lax`]), `$`, then members (`.key`,
/// `."key"`, `['key']`) and array elements (`[0]`).
pub fn json_path(path: &str) -> Result<Vec<JsonStep>, String> {
    let p = path.trim();
    let p = ["lax ", "strict "]
        .iter()
        .find_map(|m| {
            p.get(..m.len())
                .filter(|h| h.eq_ignore_ascii_case(m))
                .map(|_| p[m.len()..].trim_start())
        })
        .unwrap_or(p);
    let mut rest = p
        .strip_prefix('$')
        .ok_or_else(|| "a path starts with `$`".to_string())?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            if let Some(r) = r.strip_prefix('"') {
                let end = r.find('"').ok_or("an unclosed `\"` in a member name")?;
                steps.push(JsonStep::Key(r[..end].to_string()));
                rest = &r[end + 1..];
            } else {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                if end == 0 {
                    return Err("an empty member name".into());
                }
                steps.push(JsonStep::Key(r[..end].to_string()));
                rest = &r[end..];
            }
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or("an unclosed `[`")?;
            let inner = r[..end].trim();
            let quoted = inner
                .strip_prefix('\'')
                .and_then(|k| k.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|k| k.strip_suffix('"')));
            match quoted {
                Some(k) => steps.push(JsonStep::Key(k.to_string())),
                None => steps.push(JsonStep::Index(inner.parse().map_err(|_| {
                    format!("`[{inner}]` is neither an array index nor a quoted member name")
                })?)),
            }
            rest = &r[end + 1..];
        } else {
            return Err(format!("unexpected `{rest}`"));
        }
    }
    Ok(steps)
}

/// The value `path` leads to in the JSON text `json`; `None` if the text
/// is not JSON or the path leads nowhere.
fn json_at(json: &str, path: &[JsonStep]) -> Option<serde_json::Value> {
    let mut v: serde_json::Value = serde_json::from_str(json).ok()?;
    for step in path {
        v = match (step, v) {
            (JsonStep::Key(k), serde_json::Value::Object(mut m)) => m.remove(k)?,
            (JsonStep::Index(i), serde_json::Value::Array(mut a)) if *i < a.len() => {
                a.swap_remove(*i)
            }
            _ => return None,
        };
    }
    Some(v)
}

/// JSON_VALUE: the scalar `path` leads to, as text (a string without its
/// quotes, a number or boolean as written); `None` (NULL) for a JSON null,
/// an object or an array, a path that leads nowhere or text that is not
/// JSON (Flink's `NULL ON EMPTY` and `NULL ON ERROR`).
pub fn json_value(json: &str, path: &[JsonStep]) -> Option<String> {
    match json_at(json, path)? {
        serde_json::Value::String(s) => Some(s),
        v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)) => Some(v.to_string()),
        _ => None,
    }
}

/// JSON_EXISTS: whether `path` leads to a value (a JSON null too); false
/// for text that is not JSON (Flink's `FALSE ON ERROR`).
pub fn json_exists(json: &str, path: &[JsonStep]) -> bool {
    json_at(json, path).is_some()
}

/// A JSON value as Jackson holds it for Flink: objects keep their members
/// in the order written (serde_json's own `Value` sorts them), a member
/// written twice keeps its first place and its last value.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, as serde_json read it.
    Num(serde_json::Number),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object's members in order.
    Obj(Vec<(String, Json)>),
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(n)
                    .map(Json::Num)
                    .ok_or_else(|| E::custom("not a finite number"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::Str(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::Str(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_element()? {
                    v.push(e);
                }
                Ok(Json::Arr(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut members: Vec<(String, Json)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Json>()? {
                    json_member(&mut members, k, v);
                }
                Ok(Json::Obj(members))
            }
        }
        d.deserialize_any(V)
    }
}

/// Sets member `k` of an object: a new one at the end, an existing one
/// in its place (as Jackson's `ObjectNode.set`).
pub fn json_member(members: &mut Vec<(String, Json)>, k: String, v: Json) {
    match members.iter_mut().find(|(m, _)| *m == k) {
        Some(slot) => slot.1 = v,
        None => members.push((k, v)),
    }
}

impl Json {
    /// Parses JSON text (serde_json's parser); `None` if it is not JSON.
    pub fn parse(text: &str) -> Option<Json> {
        serde_json::from_str(text).ok()
    }

    /// Appends the value's compact text (no spaces), as Jackson writes it.
    pub fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(&n.to_string()),
            Json::Str(s) => json_quote(s, out),
            Json::Arr(a) => {
                out.push('[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    e.write(out);
                }
                out.push(']');
            }
            Json::Obj(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json_quote(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// The value's compact text.
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Json::Arr(_) | Json::Obj(_))
    }
}

/// Appends `s` as a JSON string, quoted and escaped (serde_json's escapes).
pub fn json_quote(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// `IS JSON [VALUE | SCALAR | ARRAY | OBJECT]`: the kinds of JSON text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonKind {
    /// Any JSON.
    Value,
    /// Neither an object nor an array (`null` too).
    Scalar,
    /// An array.
    Array,
    /// An object.
    Object,
}

/// `text IS JSON kind`: whether the text is JSON of that kind.
pub fn is_json(text: &str, kind: JsonKind) -> bool {
    match (Json::parse(text), kind) {
        (None, _) => false,
        (Some(_), JsonKind::Value) => true,
        (Some(j), JsonKind::Scalar) => j.is_scalar(),
        (Some(j), JsonKind::Array) => matches!(j, Json::Arr(_)),
        (Some(j), JsonKind::Object) => matches!(j, Json::Obj(_)),
    }
}

/// A SQL/JSON path's mode: `lax` (a member or element that is not there
/// is an empty result) or `strict` (an error), Calcite's default.
pub fn json_path_is_lax(path: &str) -> bool {
    path.trim_start()
        .get(..4)
        .is_some_and(|m| m.eq_ignore_ascii_case("lax "))
}

/// JSON_QUERY's `{WITHOUT | WITH [CONDITIONAL | UNCONDITIONAL]} [ARRAY]
/// WRAPPER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonWrapper {
    /// The value itself (the default).
    Without,
    /// The value in an array unless it is one.
    Conditional,
    /// The value in an array.
    Unconditional,
}

/// JSON_QUERY's `{NULL | EMPTY ARRAY | EMPTY OBJECT | ERROR} ON EMPTY`
/// and `ON ERROR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonBehavior {
    /// NULL (the default).
    Null,
    /// `[]`
    EmptyArray,
    /// `{}`
    EmptyObject,
    /// The query fails.
    Error,
}

/// JSON_QUERY, as Calcite's `jsonQuery`: the object or array `path`
/// leads to, as compact JSON text. A result that is empty (a JSON null,
/// or in lax mode a member that is not there or a scalar without a
/// wrapper) takes `on_empty`; an error (text that is not JSON, in strict
/// mode a member that is not there or a scalar without a wrapper)
/// `on_error`. `Ok(None)` is NULL; `Err` is the message of an `ERROR`.
pub fn json_query(
    json: &str,
    lax: bool,
    path: &[JsonStep],
    wrapper: JsonWrapper,
    on_empty: JsonBehavior,
    on_error: JsonBehavior,
) -> Result<Option<String>, String> {
    let behave = |b: JsonBehavior, why: String| match b {
        JsonBehavior::Null => Ok(None),
        JsonBehavior::EmptyArray => Ok(Some("[]".to_string())),
        JsonBehavior::EmptyObject => Ok(Some("{}".to_string())),
        JsonBehavior::Error => Err(why),
    };
    let Some(mut v) = Json::parse(json) else {
        return behave(on_error, format!("JSON_QUERY: `{json}` is not JSON"));
    };
    for step in path {
        let next = match (step, v) {
            (JsonStep::Key(k), Json::Obj(m)) => m.into_iter().find(|(n, _)| n == k).map(|e| e.1),
            (JsonStep::Index(i), Json::Arr(mut a)) if *i < a.len() => Some(a.swap_remove(*i)),
            _ => None,
        };
        match next {
            Some(n) => v = n,
            None if lax => v = Json::Null,
            None => {
                return behave(
                    on_error,
                    format!("JSON_QUERY: no result for the strict path in `{json}`"),
                )
            }
        }
        if v == Json::Null && lax {
            break;
        }
    }
    let v = match (wrapper, v) {
        (_, Json::Null) => Json::Null,
        (JsonWrapper::Without, v) => v,
        (JsonWrapper::Conditional, v @ Json::Arr(_)) => v,
        (_, v) => Json::Arr(vec![v]),
    };
    if v == Json::Null || lax && v.is_scalar() {
        behave(
            on_empty,
            "JSON_QUERY: an empty result (ERROR ON EMPTY)".to_string(),
        )
    } else if v.is_scalar() {
        behave(
            on_error,
            format!(
                "JSON_QUERY: strict mode requires an object or array, not the scalar {}",
                v.text()
            ),
        )
    } else {
        Ok(Some(v.text()))
    }
}

/// Appends a SQL value as Flink's JSON functions write it (Jackson nodes
/// from `JsonGenerateUtils`): numbers and booleans bare, strings quoted,
/// a DATE as ISO `yyyy-MM-dd`, a TIMESTAMP as ISO-8601 local date-time
/// (`2024-01-02T03:04:05`, the fraction without trailing zeros), a
/// TIMESTAMP_LTZ as an ISO instant (`...Z`); a NULL as `null`. `None` for
/// a type JSON has no form for (INTERVAL).
pub fn json_of(
    v: &crate::value::Value,
    ty: crate::types::DataType,
    out: &mut String,
) -> Option<()> {
    use crate::types::DataType as T;
    use crate::value::Value as V;
    use std::fmt::Write;
    match v {
        V::Null => out.push_str("null"),
        V::Str(s) => json_quote(s, out),
        V::Double(d) if !d.is_finite() => {
            // Jackson quotes NaN and the infinities.
            out.push('"');
            v.write_text(ty, out, "null");
            out.push('"');
        }
        V::Bool(_) | V::Int(_) | V::BigInt(_) | V::Double(_) | V::Decimal(_) => {
            v.write_text(ty, out, "null")
        }
        V::Date(d) => {
            let (y, m, d) = civil_from_days(i64::from(*d));
            let _ = write!(out, "\"{y:04}-{m:02}-{d:02}\"");
        }
        V::Timestamp(ms) => {
            let (y, mo, d, h, mi, s, milli) = timestamp_parts(*ms);
            let _ = write!(out, "\"{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}");
            if ty == T::TimestampLtz {
                // ISO_INSTANT: the fraction in whole milliseconds.
                if milli > 0 {
                    let _ = write!(out, ".{milli:03}");
                }
                out.push('Z');
            } else if milli > 0 {
                let f = format!("{milli:03}");
                out.push('.');
                out.push_str(f.trim_end_matches('0'));
            }
            out.push('"');
        }
        V::Interval(_) => return None,
    }
    Some(())
}
