//! The fixed part of every model turn, in o200k_base tokens as a provider bills it: the system prompt
//! plus the tool definitions serialised exactly as the OpenAI-compatible request sends them.

#[cfg(test)]
mod tests {
    use super::super::{prompt::system_prompt, tool_specs, Offer};
    use serde_json::json;
    use webpilot_core::secrets::Secrets;
    use webpilot_llm::providers::openai::request_body;
    use webpilot_llm::{ChatMessage, ChatRequest, Role};

    /// Most tokens the system prompt and the tools may take together on a plain task.
    const BUDGET: usize = 1_000;

    fn fixed_tokens(structured: bool, offer: Offer) -> (usize, usize) {
        let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
        let schema = json!({"type": "object", "properties": {"price": {"type": "number"}}});
        let request = ChatRequest {
            messages: vec![ChatMessage::text(Role::System, system_prompt(&[], &Secrets::default(), structured))],
            tools: tool_specs(structured.then_some(&schema), offer),
            max_output_tokens: 1024,
        };
        let body = request_body("m", &request);
        let system = body["messages"][0]["content"].as_str().expect("system text");
        (bpe.encode_with_special_tokens(system).len(), bpe.encode_with_special_tokens(&body["tools"].to_string()).len())
    }

    #[test]
    fn system_prompt_and_tools_fit_the_per_turn_budget() {
        let (system, tools) = fixed_tokens(false, Offer::default());
        println!("system prompt {system} + tools {tools} = {} o200k tokens", system + tools);
        assert!(system + tools <= BUDGET, "system {system} + tools {tools} > {BUDGET}");
        // With an outputSchema, the task's schema rides in `done` on top; the wording around it adds at most 50.
        let (system, tools) = fixed_tokens(true, Offer::default());
        println!("structured: system prompt {system} + tools {tools} = {}", system + tools);
        assert!(system + tools <= BUDGET + 50, "structured: system {system} + tools {tools}");
        // A model that sees the page is offered the point parameters too (and `screenshot` with `auto`): the
        // same budget holds (docs/agent.md, "Vision").
        let (system, tools) = fixed_tokens(false, Offer { screenshot: true, points: true });
        println!("with points and screenshot: system prompt {system} + tools {tools} = {}", system + tools);
        assert!(system + tools <= BUDGET, "points: system {system} + tools {tools} > {BUDGET}");
        // A picture with marks (`vision: "on"`) has one line said beside it.
        let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
        let note = bpe.encode_with_special_tokens(super::super::MARKS_NOTE).len();
        println!("the marks note: {note} o200k tokens");
        assert!(note <= 16, "the marks note takes {note} tokens");
    }
}
