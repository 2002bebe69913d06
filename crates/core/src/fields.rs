//! Typed, field-naming access to a JSON request object: the building block of every validator.

use crate::error::{ApiError, ErrorCode};
use serde_json::{Map, Value};

pub(crate) fn invalid_params(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidParams, msg)
}
pub(crate) fn missing(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::MissingRequiredField, msg)
}
pub(crate) fn out_of_bounds(msg: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidParameter, msg)
}

/// A request body: read from its JSON into a validated value, a bad field answered with the spec's
/// per-field code (`INVALID_PARAMS`, `INVALID_PARAMETER`, `MISSING_REQUIRED_FIELD`, ...). Every transport
/// reads a body through this (the HTTP extractor, MCP's tool arguments, the socket's messages).
pub trait RequestBody: Sized {
    fn from_json(body: &Value) -> Result<Self, ApiError>;
}

/// Any JSON: a body whose validation belongs to the call it carries (node-to-node calls).
impl RequestBody for Value {
    fn from_json(body: &Value) -> Result<Self, ApiError> {
        Ok(body.clone())
    }
}

/// Typed access to the fields of one JSON object, with errors that name the field.
/// A field set to `null` counts as absent.
pub struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'static str,
}

impl<'a> Fields<'a> {
    /// `what` names the object in error messages ("request body", "message").
    pub fn of(value: &'a Value, what: &str) -> Result<Self, ApiError> {
        Self::with_prefix(value, what, "")
    }

    fn with_prefix(value: &'a Value, what: &str, prefix: &'static str) -> Result<Self, ApiError> {
        match value {
            Value::Object(obj) => Ok(Fields { obj, prefix }),
            _ => Err(invalid_params(format!("{what} must be a JSON object"))),
        }
    }

    /// The field, `None` when absent or null.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.obj.get(name).filter(|v| !v.is_null())
    }

    /// The field's name as errors give it (`action.x`).
    pub fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The field as given, `null` included.
    pub fn raw(&self, name: &str) -> Option<&'a Value> {
        self.obj.get(name)
    }

    /// The names of the fields given, in the object's order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        self.obj.keys().map(String::as_str)
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn opt_str(&self, name: &str) -> Result<Option<&'a str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(invalid_params(format!("{}{name} must be a string", self.prefix))),
        }
    }

    pub fn req_str(&self, name: &str) -> Result<&'a str, ApiError> {
        self.opt_str(name)?.ok_or_else(|| self.required(name))
    }

    /// The answer to a required field left out: `MISSING_REQUIRED_FIELD`, `name is required`.
    pub fn required(&self, name: &str) -> ApiError {
        missing(format!("{}{name} is required", self.prefix))
    }

    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(invalid_params(format!("{}{name} must be a boolean", self.prefix))),
        }
    }

    pub fn opt_f64(&self, name: &str) -> Result<Option<f64>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| invalid_params(format!("{}{name} must be a finite number", self.prefix))),
            Some(_) => Err(invalid_params(format!("{}{name} must be a number", self.prefix))),
        }
    }

    pub fn req_f64(&self, name: &str) -> Result<f64, ApiError> {
        self.opt_f64(name)?.ok_or_else(|| missing(format!("{}{name} is required", self.prefix)))
    }

    /// An optional whole number within `min..=max`.
    pub fn opt_u64_in(&self, name: &str, min: u64, max: u64) -> Result<Option<u64>, ApiError> {
        let Some(f) = self.opt_f64(name)? else {
            return Ok(None);
        };
        if f.fract() != 0.0 {
            return Err(invalid_params(format!("{}{name} must be a whole number", self.prefix)));
        }
        if f < min as f64 || f > max as f64 {
            return Err(out_of_bounds(format!("{}{name} must be between {min} and {max}", self.prefix)));
        }
        Ok(Some(f as u64))
    }

    pub fn opt_str_array(&self, name: &str) -> Result<Option<Vec<&'a str>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| invalid_params(format!("{}{name} must be an array of strings", self.prefix)))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(invalid_params(format!("{}{name} must be an array of strings", self.prefix))),
        }
    }

    pub fn opt_object(&self, name: &str, prefix: &'static str) -> Result<Option<Fields<'a>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => Fields::with_prefix(v, &format!("{}{name}", self.prefix), prefix).map(Some),
        }
    }
}
