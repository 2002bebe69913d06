//! Wire formats of the supported model APIs.

pub mod anthropic;
pub mod openai;
