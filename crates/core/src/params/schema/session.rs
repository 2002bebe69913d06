//! The bodies of start-session and run-task, declared once: each field's name, type (with its bounds) and
//! description, in the order the fields are checked (the first bad one is the answer).

use super::identity::{Locale, TimeZone, UserAgent};
use super::values::{persist_needs_profile, AvoidDomains, DefaultMode, ProfileName, Proxies};
use super::values::{ReplayOf, StartingUrl, TaskText};
use crate::identity::Geolocation;
use crate::output::OutputSchema;
use crate::params::decl::{body, Int};
use crate::params::{CacheMode, MAX_DURATION_MS, MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS};
use crate::params::{MIN_DURATION_MS, MIN_INPUT_TOKENS, MIN_OUTPUT_TOKENS};
use crate::secrets::Secrets;
use crate::vision::VisionMode;

body! {
    /// Session parameters: the body of `POST /start/start-session` (every field optional).
    pub struct StartSessionRequest {
        /// The initial task; may be empty when tasks are sent later.
        opt "taskDetails" task_details: TaskText<0>,
        read mode: ModeOption,
        /// Terminate the session after the (first) task completes.
        opt "terminateOnCompletion" terminate_on_completion: bool,
        // Not in the published document (yet): whether the session is recorded.
        hidden "recording" recording: bool,
        read limits: TaskOptions,
        doc _options: SessionOptions,
        flatten profile: ProfileOptions,
        flatten identity: IdentityOptions,
    }
}

body! {
    /// The body of `POST /start/run-task`: session parameters with a required task; terminateOnCompletion
    /// is forced to true.
    pub struct RunTaskRequest {
        req "taskDetails" task_details: TaskText<1>,
        read mode: ModeOption,
        // Checked to be a boolean, then forced to true (not documented).
        hidden "terminateOnCompletion" terminate_on_completion: bool,
        hidden "recording" recording: bool,
        read limits: TaskOptions,
        doc _options: SessionOptions,
        flatten profile: ProfileOptions,
        flatten identity: IdentityOptions,
    }
}

body! {
    /// The optional session parameters start-session and run-task share.
    pub struct SessionOptions {
        merge mode: ModeOption,
        merge limits: TaskOptions,
    }
}

body! {
    /// `mode` of a session, documented in [`SessionOptions`].
    pub struct ModeOption {
        /// Only `default` is supported.
        opt "mode" mode: DefaultMode,
    }
}

body! {
    /// The limits a session gives its tasks and a newTask message its own, documented in
    /// [`SessionOptions`].
    pub struct TaskOptions {
        /// An absolute http or https URL; a blank page when absent or null.
        opt "startingUrl" starting_url: StartingUrl,
        /// Domains the agent must not visit.
        opt "avoidDomains" avoid_domains: AvoidDomains,
        /// Values the agent may type without seeing them, by name (docs/api.md); a `totp` entry types a
        /// one-time code (docs/agent.md).
        opt "secrets" secrets: Secrets,
        /// A JSON Schema the final answer must satisfy (docs/api.md).
        opt "outputSchema" output_schema: OutputSchema,
        /// The taskId of an earlier task to replay (docs/api.md).
        opt "replayOf" replay_of: ReplayOf,
        /// The action cache (docs/agent.md): `auto` (the default) replays this user's earlier run of the same
        /// task without the model, and records a successful model run; `off` does neither.
        opt "cache" cache: CacheMode,
        /// Session timeout in ms (default and maximum 300000).
        opt "maxDuration" max_duration: Int<MIN_DURATION_MS, MAX_DURATION_MS>,
        opt "maxInputTokens" max_input_tokens: Int<MIN_INPUT_TOKENS, MAX_INPUT_TOKENS>,
        opt "maxOutputTokens" max_output_tokens: Int<MIN_OUTPUT_TOKENS, MAX_OUTPUT_TOKENS>,
        /// When the model sees a screenshot of the page beside the text (docs/agent.md, "Vision"): `auto`
        /// (the default) when it helps, `on` every turn, `off` never. A model the operator did not declare
        /// image-capable (`--llm-vision`) gets none either way.
        opt "vision" vision: VisionMode,
    }
}

body! {
    /// The profile a session starts from (start-session and run-task only; not a task's).
    pub struct ProfileOptions {
        /// A profile of the caller's to start the browser context from (docs/profiles-and-files.md):
        /// 1 to 64 of `A-Z a-z 0-9 . _ -`.
        opt "profile" profile: ProfileName,
        /// Save the context's cookies and storage back into `profile` when the session ends; one live session
        /// at a time may (409 `PROFILE_IN_USE`).
        opt "persistProfile" persist_profile: bool where persist_needs_profile(&profile, &persist_profile),
        /// Upstream proxies the session's requests leave through, after the egress policy allowed them
        /// (docs/proxies-and-identity.md). A proxy that cannot be used is a 400 `INVALID_PARAMETER` naming it.
        opt "proxies" proxies: Proxies,
    }
}

body! {
    /// The browser identity of a session (start-session and run-task only; docs/proxies-and-identity.md). A
    /// bad value is 400 `INVALID_PARAMETER` naming the field.
    pub struct IdentityOptions {
        /// A BCP 47 language tag, e.g. `de-DE`: `navigator.language(s)`, `Intl` and the `Accept-Language`
        /// header (`de-DE,de;q=0.9`).
        opt "locale" locale: Locale,
        /// An IANA time zone name, e.g. `Europe/Berlin`: `Intl.DateTimeFormat().resolvedOptions().timeZone`
        /// and `Date`.
        opt "timezone" timezone: TimeZone,
        /// `navigator.userAgent` and the `User-Agent` header: printable ASCII.
        opt "userAgent" user_agent: UserAgent,
        /// Where `navigator.geolocation` says the browser is; the permission is granted to the session.
        opt "geolocation" geolocation: Geolocation,
    }
}
