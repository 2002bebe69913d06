//! `/echo`: a plain-text field "Code" whose value the page shows again in large type below it (as sites
//! echo a typed name or a card number), and a blue block, each at a fixed place: for the vision test that
//! reads a screenshot's pixels where a typed secret shows.

use axum::response::Html;

use super::html::page;

/// Where things are, in viewport CSS pixels `(left, top, width, height)`.
pub const FIELD: (u32, u32, u32, u32) = (20, 40, 400, 40);
pub const ECHO: (u32, u32, u32, u32) = (20, 120, 600, 60);
pub const BLUE: (u32, u32, u32, u32) = (700, 220, 200, 150);

pub(crate) async fn echo() -> Html<String> {
    let (fl, ft, fw, fh) = FIELD;
    let (el, et, ew, eh) = ECHO;
    let (bl, bt, bw, bh) = BLUE;
    page(
        "Echo",
        &format!(
            r#"<style>html,body{{margin:0;background:#fff;font-family:sans-serif}}
label{{position:absolute;left:{fl}px;top:10px;font-size:16px}}
#code{{position:absolute;left:{fl}px;top:{ft}px;width:{fw}px;height:{fh}px;box-sizing:border-box;font-size:24px}}
#echo{{position:absolute;left:{el}px;top:{et}px;width:{ew}px;height:{eh}px;font-size:40px;color:#000}}
#blue{{position:absolute;left:{bl}px;top:{bt}px;width:{bw}px;height:{bh}px;background:#0000ff}}</style>
<label for="code">Code</label><input id="code" type="text" autocomplete="off">
<div id="echo"></div><div id="blue"></div>
<script>const code = document.getElementById('code');
code.addEventListener('input', () => {{ document.getElementById('echo').textContent = code.value; }});</script>"#
        ),
    )
}
