//! The product listing the agent's observation is measured on: 10 nav links, a search form, 5 filters
//! and a select, 30 cards (name, price, "Add to cart", "Details") and 20 footer links. Variants put
//! cards 16–25 in a same-origin iframe and 26–30 in an open shadow root (`/shop?layout=frames`), or
//! cards and a sign-in form in cross-origin iframes (`/shop/xo`). "Add to cart" writes the product into
//! the `Cart:` line of its own document.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Html;

use super::html::page;
use super::SiteState;

const NAV: [&str; 10] = ["Home", "Deals", "New", "Women", "Men", "Kids", "Garden", "Electronics", "Sports", "Help"];
const FOOTER: [&str; 20] = [
    "About",
    "Careers",
    "Press",
    "Blog",
    "Contact",
    "Help center",
    "Returns",
    "Shipping",
    "Order status",
    "Gift cards",
    "Privacy",
    "Terms",
    "Cookies",
    "Accessibility",
    "Sitemap",
    "Affiliates",
    "Sell with us",
    "Investors",
    "Sustainability",
    "Stores",
];
const FILTERS: [&str; 5] = ["In stock", "On sale", "Free shipping", "4 stars & up", "New arrivals"];

/// The script every document with cards carries: "Add to cart" fills its `Cart:` line, which also says
/// when one product was added more than once (so a click that lands twice shows).
const CART_SCRIPT: &str = r#"<script>
var added = {};
function addToCart(n) {
  added[n] = (added[n] || 0) + 1;
  document.getElementById('cart').textContent =
    'Cart: Product ' + n + (added[n] > 1 ? ' (added ' + added[n] + ' times)' : '');
}
</script>"#;

fn card(n: u32) -> String {
    format!(
        "<div class=\"card\"><h3>Product {n}</h3><p class=\"price\">${}.99</p>\
         <button onclick=\"addToCart({n})\">Add to cart</button> <a href=\"/shop/item/{n}\">Details</a></div>\n",
        n + 9
    )
}

fn cards(from: u32, to: u32) -> String {
    (from..=to).map(card).collect()
}

fn links(names: &[&str], prefix: &str) -> String {
    names
        .iter()
        .map(|n| format!("<li><a href=\"/{prefix}/{}\">{n}</a></li>", n.to_lowercase().replace(' ', "-")))
        .collect()
}

fn header() -> String {
    let filters: String =
        FILTERS.iter().map(|f| format!("<label><input type=\"checkbox\" name=\"f\"> {f}</label>\n")).collect();
    format!(
        "<nav><ul class=\"nav\">{}</ul></nav>\n<h1>Fixture Shop</h1>\n\
         <form action=\"/shop\" method=\"get\"><input name=\"q\" placeholder=\"Search products\"> \
         <button type=\"submit\">Search</button></form>\n\
         <div class=\"filters\">{filters}<label>Sort by <select name=\"sort\"><option>Featured</option>\
         <option>Price: low to high</option><option>Price: high to low</option><option>Newest</option></select></label></div>\n\
         <p id=\"cart\">Cart: empty</p>\n",
        links(&NAV, "c")
    )
}

fn footer() -> String {
    format!("<footer><ul class=\"footer\">{}</ul></footer>\n", links(&FOOTER, "info"))
}

/// Cards 26–30 inside an open shadow root, with their own "Add to cart" handlers (shadow DOM has no
/// inline-handler scope of its own, so they are wired after attaching).
fn shadow_cards() -> String {
    let inner = cards(26, 30).replace('"', "\\\"").replace('\n', "");
    format!(
        "<div id=\"shadow-host\"></div>\n<script>\n(function () {{\n\
         const root = document.getElementById('shadow-host').attachShadow({{mode: 'open'}});\n\
         root.innerHTML = \"{inner}\";\n\
         root.querySelectorAll('button').forEach((b, i) => b.onclick = () => addToCart(26 + i));\n\
         }})();\n</script>\n"
    )
}

/// `/shop` (`?layout=frames`: cards 16–25 in a same-origin iframe, 26–30 in an open shadow root).
pub(crate) async fn shop(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let framed = q.get("layout").is_some_and(|l| l == "frames");
    let grid = if framed {
        format!(
            "{}<iframe src=\"/shop/cards?from=16&to=25\" title=\"More products\" width=\"900\" height=\"600\"></iframe>\n{}",
            cards(1, 15),
            shadow_cards()
        )
    } else {
        cards(1, 30)
    };
    page("Fixture Shop", &format!("{CART_SCRIPT}{}<div class=\"grid\">\n{grid}</div>\n{}", header(), footer()))
}

/// `/shop/cards?from=A&to=B`: only those cards and a `Cart:` line (the iframe documents).
pub(crate) async fn shop_cards(Query(q): Query<HashMap<String, String>>) -> Html<String> {
    let num = |k: &str, d: u32| q.get(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(d).min(200);
    let (from, to) = (num("from", 1), num("to", 3));
    page(
        "Cards",
        &format!("{CART_SCRIPT}<p id=\"cart\">Cart: empty</p>\n<div class=\"grid\">\n{}</div>", cards(from, to)),
    )
}

/// `/shop/xo`: cards 1–3 and the sign-in form, each in a cross-origin iframe (`frame.localhost`).
pub(crate) async fn shop_cross_origin(State(state): State<SiteState>) -> Html<String> {
    let port = state.port;
    page(
        "Partner offers",
        &format!(
            "<h1>Partner offers</h1>\n<p>Offers from our partner, shown in frames.</p>\n\
             <iframe src=\"http://frame.localhost:{port}/shop/cards?from=1&to=3\" title=\"Partner cards\" width=\"700\" height=\"330\"></iframe>\n\
             <iframe src=\"http://frame.localhost:{port}/login\" title=\"Partner sign-in\" width=\"500\" height=\"260\"></iframe>\n"
        ),
    )
}
