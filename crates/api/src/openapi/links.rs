//! OpenAPI links: which answer's id feeds which operation (a started session's `sessionId` into its files, a
//! created webhook's `webhookId` into its deliveries, ...). Generators show them as "next steps", and
//! schemathesis's stateful phase follows them to reach operations a random id would only ever 404.

use serde_json::Value;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::HttpMethod;
use utoipa::openapi::{OpenApi as Document, RefOr};

/// One link: from `(method, path, status)` to `operation`, with its parameters as runtime expressions.
struct Link {
    from: (HttpMethod, &'static str),
    name: &'static str,
    operation: &'static str,
    parameters: &'static [(&'static str, &'static str)],
}

const SESSION: &str = "$response.body#/sessionId";

const LINKS: &[Link] = &[
    Link {
        from: (HttpMethod::Post, "/start/start-session"),
        name: "ListFiles",
        operation: "listFiles",
        parameters: &[("sessionId", SESSION)],
    },
    Link {
        from: (HttpMethod::Post, "/start/start-session"),
        name: "UploadFile",
        operation: "uploadFile",
        parameters: &[("sessionId", SESSION)],
    },
    Link {
        from: (HttpMethod::Post, "/start/start-session"),
        name: "ShareStream",
        operation: "shareStream",
        parameters: &[("sessionId", SESSION)],
    },
    Link {
        from: (HttpMethod::Post, "/start/run-task"),
        name: "GetTask",
        operation: "getTask",
        parameters: &[("sessionId", SESSION), ("taskId", "$response.body#/taskId")],
    },
    Link {
        from: (HttpMethod::Post, "/start/run-task"),
        name: "GetRecording",
        operation: "getRecording",
        parameters: &[("sessionId", SESSION)],
    },
    Link {
        from: (HttpMethod::Post, "/start/run-task"),
        name: "ListFiles",
        operation: "listFiles",
        parameters: &[("sessionId", SESSION)],
    },
    Link {
        from: (HttpMethod::Post, "/start/send-message"),
        name: "GetTask",
        operation: "getTask",
        parameters: &[("sessionId", "$request.body#/sessionId"), ("taskId", "$response.body#/taskId")],
    },
    Link {
        from: (HttpMethod::Post, "/sessions/{sessionId}/files"),
        name: "GetFile",
        operation: "getFile",
        parameters: &[("sessionId", "$request.path.sessionId"), ("name", "$response.body#/file/name")],
    },
    Link {
        from: (HttpMethod::Post, "/sessions/{sessionId}/files"),
        name: "DeleteFile",
        operation: "deleteFile",
        parameters: &[("sessionId", "$request.path.sessionId"), ("name", "$response.body#/file/name")],
    },
    Link {
        from: (HttpMethod::Post, "/webhooks"),
        name: "ListDeliveries",
        operation: "listWebhookDeliveries",
        parameters: &[("webhookId", "$response.body#/webhookId")],
    },
    Link {
        from: (HttpMethod::Post, "/webhooks"),
        name: "RotateSecret",
        operation: "rotateWebhookSecret",
        parameters: &[("webhookId", "$response.body#/webhookId")],
    },
    Link {
        from: (HttpMethod::Post, "/webhooks"),
        name: "DeleteWebhook",
        operation: "deleteWebhook",
        parameters: &[("webhookId", "$response.body#/webhookId")],
    },
    Link {
        from: (HttpMethod::Put, "/profiles/{name}/export"),
        name: "GetProfile",
        operation: "getProfile",
        parameters: &[("name", "$request.path.name")],
    },
    Link {
        from: (HttpMethod::Put, "/profiles/{name}/export"),
        name: "ExportProfile",
        operation: "exportProfile",
        parameters: &[("name", "$request.path.name")],
    },
    Link {
        from: (HttpMethod::Put, "/profiles/{name}/export"),
        name: "DeleteProfile",
        operation: "deleteProfile",
        parameters: &[("name", "$request.path.name")],
    },
];

/// Adds [`LINKS`] to the 200 answers they start from. A link whose operation is missing is left out, so the
/// document never names an operation it does not hold (the openapi test checks every link's target).
pub fn add(doc: &mut Document) {
    for link in LINKS {
        let (method, path) = &link.from;
        let Some(item) = doc.paths.paths.get_mut(*path) else { continue };
        let operation = match method {
            HttpMethod::Post => item.post.as_mut(),
            HttpMethod::Put => item.put.as_mut(),
            _ => None,
        };
        let Some(operation) = operation else { continue };
        let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") else { continue };
        let built = link
            .parameters
            .iter()
            .fold(LinkBuilder::new().operation_id(link.operation), |b, (name, expr)| {
                b.parameter(*name, Value::String((*expr).to_owned()))
            })
            .build();
        ok.links.insert(link.name.to_owned(), RefOr::T(built));
    }
}
