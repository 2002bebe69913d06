//! Pages that make files: a download answered with `Content-Disposition: attachment`, one the page's
//! script makes from a Blob, and one of any size (for the caps). Their bytes are fixed, so a test knows
//! the sha256 to expect.

use std::collections::HashMap;

use std::time::Duration;

use axum::body::Body;
use axum::extract::Query;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{Html, IntoResponse, Response};

use super::html::{js_string, page};

/// The bytes of `/files/report.csv`.
pub const REPORT_CSV: &[u8] = b"invoice,amount\nINV-001,42.00\nINV-002,17.50\n";
/// The text of the Blob download `blob-report.txt` that `/files`'s button makes.
pub const BLOB_TEXT: &str = "made by script in the page: 0123456789\n";
/// The byte `/files/big` repeats.
pub const BIG_BYTE: u8 = b'x';

/// `/files`: a link to the attachment, a button making a Blob download, and a link to `/files/big`
/// (`?bytes=N` passes N on to it).
pub(crate) async fn files(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let bytes: u64 = q.get("bytes").and_then(|v| v.parse().ok()).unwrap_or(1000);
    let text = js_string(BLOB_TEXT);
    page(
        "Files",
        &format!(
            "<h1>Files</h1>\n\
             <p><a href=\"/files/report.csv\">Download report</a></p>\n\
             <p><button id=\"blob\" onclick=\"makeBlob()\">Make blob report</button></p>\n\
             <p><a href=\"/files/big?bytes={bytes}\">Download big file</a></p>\n\
             <p><a href=\"/files/report.csv?delay_ms=2000\">Download slow report</a></p>\n\
             <script>\n\
             function makeBlob() {{\n\
               const url = URL.createObjectURL(new Blob([{text}], {{ type: 'text/plain' }}));\n\
               const a = document.createElement('a');\n\
               a.href = url; a.download = 'blob-report.txt';\n\
               document.body.appendChild(a); a.click(); a.remove();\n\
             }}\n\
             </script>"
        ),
    )
}

/// `/files/report.csv[?delay_ms=N]`: [`REPORT_CSV`] as an attachment; with `delay_ms` the headers come
/// at once and the bytes N ms later (at most 10 s), so the download is still under way meanwhile.
pub(crate) async fn report(Query(q): Query<HashMap<String, String>>) -> Response {
    let delay = Duration::from_millis(q.get("delay_ms").and_then(|v| v.parse().ok()).unwrap_or(0).min(10_000));
    let headers = [(CONTENT_TYPE, "text/csv"), (CONTENT_DISPOSITION, "attachment; filename=\"report.csv\"")];
    let body = futures::stream::once(async move {
        tokio::time::sleep(delay).await;
        Ok::<_, std::convert::Infallible>(REPORT_CSV)
    });
    (headers, Body::from_stream(body)).into_response()
}

/// `/files/big?bytes=N`: N times [`BIG_BYTE`] (at most 64 MiB) as the attachment `big.bin`.
pub(crate) async fn big(Query(q): Query<HashMap<String, String>>) -> Response {
    let n: usize = q.get("bytes").and_then(|v| v.parse().ok()).unwrap_or(1000).min(64 << 20);
    let headers =
        [(CONTENT_TYPE, "application/octet-stream"), (CONTENT_DISPOSITION, "attachment; filename=\"big.bin\"")];
    (headers, vec![BIG_BYTE; n]).into_response()
}

/// `/files/upload`: a file input labelled "Document" (at page x 100..400, y 300..340) and a button that posts the chosen file's bytes to
/// `/files/echo`, showing the server's answer in `#received`.
pub(crate) async fn upload_form() -> Html<String> {
    page(
        "Upload",
        "<h1>Upload</h1>\n\
         <form onsubmit=\"return false\"><label for=\"doc\">Document</label>\n\
         <input type=\"file\" id=\"doc\" style=\"position: absolute; left: 100px; top: 300px; width: 300px; height: 40px\">\n\
         <button type=\"button\" onclick=\"send()\">Send file</button></form>\n\
         <p id=\"received\">nothing yet</p>\n\
         <script>\n\
         async function send() {\n\
           const file = document.getElementById('doc').files[0];\n\
           if (!file) { document.getElementById('received').textContent = 'no file'; return; }\n\
           const r = await fetch('/files/echo', { method: 'POST', body: file });\n\
           document.getElementById('received').textContent = file.name + ': ' + await r.text();\n\
         }\n\
         </script>",
    )
}

/// `POST /files/echo`: what the server received, as `received N bytes: <hex>`.
pub(crate) async fn echo(body: axum::body::Bytes) -> String {
    let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
    format!("received {} bytes: {hex}", body.len())
}
