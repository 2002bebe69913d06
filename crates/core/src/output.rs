//! `outputSchema`: a JSON Schema the task's final answer must satisfy. Compiled once when the request
//! is read (a schema that does not compile is a 400), then used by the agent to check its answer.

use crate::error::ApiError;
use crate::fields::{invalid_params, out_of_bounds};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// Longest accepted schema, serialised (bytes).
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;

/// A compiled output schema. Cheap to clone.
#[derive(Clone)]
pub struct OutputSchema {
    schema: Arc<Value>,
    validator: Arc<jsonschema::Validator>,
}

impl PartialEq for OutputSchema {
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema
    }
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OutputSchema({})", self.schema)
    }
}

impl OutputSchema {
    /// Compiles the `outputSchema` field. Remote `$ref`s are not fetched.
    pub fn parse(raw: &Value) -> Result<OutputSchema, ApiError> {
        if !raw.is_object() {
            return Err(invalid_params("outputSchema must be a JSON Schema object"));
        }
        if raw.to_string().len() > MAX_SCHEMA_BYTES {
            return Err(out_of_bounds(format!("outputSchema must be at most {MAX_SCHEMA_BYTES} bytes")));
        }
        let validator = jsonschema::options()
            .build(raw)
            .map_err(|e| invalid_params(format!("outputSchema is not a valid JSON Schema: {e}")))?;
        Ok(OutputSchema { schema: Arc::new(raw.clone()), validator: Arc::new(validator) })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Checks a value; the error lists what is wrong (at most five problems), for the model to fix.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!("{}: {e}", if at.is_empty() { "(root)" } else { at.as_str() })
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Reads a final answer given as text: the JSON itself, or JSON inside a ``` fence.
    pub fn parse_answer(text: &str) -> Result<Value, String> {
        let t = text.trim();
        let t = t
            .strip_prefix("```json")
            .or_else(|| t.strip_prefix("```"))
            .and_then(|r| r.trim_end().strip_suffix("```"))
            .unwrap_or(t);
        serde_json::from_str(t.trim()).map_err(|e| format!("the answer is not JSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_checked_against_the_schema() {
        let s = OutputSchema::parse(&json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "price": {"type": "number"}},
            "required": ["title", "price"]
        }))
        .unwrap();
        assert!(s.check(&json!({"title": "A", "price": 3.5})).is_ok());
        let err = s.check(&json!({"title": 1})).unwrap_err();
        assert!(err.contains("price") && err.contains("/title"), "{err}");
        assert_eq!(OutputSchema::parse_answer("```json\n{\"a\": 1}\n```").unwrap(), json!({"a": 1}));
        assert!(OutputSchema::parse_answer("Done!").is_err());
    }

    #[test]
    fn bad_schemas_are_refused() {
        assert!(OutputSchema::parse(&json!("string")).is_err());
        assert!(OutputSchema::parse(&json!({"type": "no-such-type"})).is_err());
        assert!(OutputSchema::parse(&json!({"type": "object", "description": "x".repeat(20_000)})).is_err());
    }
}
