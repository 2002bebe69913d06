//! The wire shape of the request bodies: what each validated request type
//! ([`RequestBody`](crate::fields::RequestBody)) reads, field by field, with its bounds. A body declared
//! with [`body!`](crate::params::decl::body) is read by its own declaration and documented by it; the
//! others are schemas beside a hand-written reader. The request types take their `ToSchema` from here
//! (`params::bodies`), the OpenAPI document and MCP's tool input schemas take theirs from the request
//! types, and the tests below hold every property named here to a field its validator reads.

mod chat;
mod identity;
mod interactions;
mod messages;
mod parts;
mod session;
mod task_messages;
#[cfg(test)]
mod tests;
mod values;

pub use chat::ChatCompletionRequest;
pub use interactions::{Click, DoubleClick, KeyPress, Point, TypeText};
pub use messages::{Interaction, Message};
pub(crate) use parts::{ChatMessage, GeolocationOption};
pub use session::{IdentityOptions, ProfileOptions, RunTaskRequest, StartSessionRequest, TaskOptions};
pub use task_messages::{GuardrailMessage, InteractionMessage, NewTaskMessage, SendMessageRequest, StateMessage};
