//! The final answer: plain text, or, when the task has an outputSchema, JSON that satisfies it. A
//! structured answer becomes the task's message as JSON text (the runner also parses it into
//! `data.output`).

use serde_json::Value;
use webpilot_core::output::OutputSchema;

/// Answers that may fail the schema before the task fails with `OUTPUT_INVALID` (one retry).
pub const MAX_INVALID_ANSWERS: usize = 2;

/// The task's message for a final answer, or what is wrong with it (for the model to fix).
/// `output` is the `done` tool's `output` argument; without it the message is read as JSON.
pub fn accept(schema: Option<&OutputSchema>, message: String, output: Option<Value>) -> Result<String, String> {
    let Some(schema) = schema else { return Ok(message) };
    let value = match output {
        Some(v) => v,
        None => OutputSchema::parse_answer(&message)
            .map_err(|e| format!("{e}; call done with an `output` argument that matches the schema"))?,
    };
    schema.check(&value).map_err(|problems| format!("the output does not match the schema: {problems}"))?;
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_answers_are_checked() {
        let schema = OutputSchema::parse(&json!({"type": "object", "required": ["n"],
            "properties": {"n": {"type": "integer"}}}))
        .unwrap();
        assert_eq!(accept(None, "hi".into(), None).unwrap(), "hi");
        assert_eq!(accept(Some(&schema), String::new(), Some(json!({"n": 3}))).unwrap(), r#"{"n":3}"#);
        assert_eq!(accept(Some(&schema), "```json\n{\"n\": 4}\n```".into(), None).unwrap(), r#"{"n":4}"#);
        assert!(accept(Some(&schema), "four".into(), None).unwrap_err().contains("not JSON"));
        assert!(accept(Some(&schema), String::new(), Some(json!({"n": "x"}))).unwrap_err().contains("/n"));
    }
}
