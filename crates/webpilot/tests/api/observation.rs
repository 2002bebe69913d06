//! What the model agent sees on real pages: the product listing in document order with every card's
//! name, price and both controls; the same listing with cards in a same-origin iframe and an open
//! shadow root; cross-origin frames read through their own targets; and clicks and typing by index
//! landing inside all of them.

use crate::agent::{tool_results, with_model};
use serde_json::json;
use webpilot_testkit::model::{content_text, last_observation, line_index};
use webpilot_testkit::Reply;

fn add_to_cart(product: u32) -> Reply {
    Reply::call("click", json!({ "index": format!("@line:Product {product} $:1") }))
}

#[tokio::test]
async fn the_listing_shows_every_card_in_context_and_its_buttons_work() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![add_to_cart(29), Reply::call("find", json!({ "query": "product 3 " })), Reply::done("ok")]);
    let key = app.key().await;
    let r = app
        .post("/start/run-task", &key, json!({ "taskDetails": "add product 29", "startingUrl": app.site.url("/shop") }))
        .await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let page = last_observation(&reqs[0]);
    for n in 1..=30 {
        let line = page.lines().find(|l| l.starts_with(&format!("Product {n} ${}.99 [", n + 9)));
        let line = line.unwrap_or_else(|| panic!("product {n} is not on a line of its own: {page}"));
        assert!(line_index(line, "Product", 2).is_some(), "both controls of product {n}: {line}");
    }
    assert!(page.contains("Product 1 $10.99 ") && page.contains(" Add to cart] [") && page.contains(" Details]"));
    assert_eq!(page.matches("Add to cart").count(), 1, "repeated cards name their buttons once: {page}");
    for label in [
        "Home]",
        "Help]",
        "About]",
        "Stores]",
        "Sustainability]",
        "checkbox: In stock",
        "select: Sort by = \"Featured\"; options: Featured | Price",
    ] {
        assert!(page.contains(label), "{label} is missing: {page}");
    }
    assert!(page.contains("--- below the visible area ---"));
    assert!(!page.contains("cut here"), "the listing fits: {page}");
    // The budgets of issue 35, counted as a provider bills them (o200k_base): the page part of the
    // listing at most 800 tokens; the system prompt plus the tools, as sent, at most 1,000.
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base");
    let part = page.split_once("\nPage:\n").map_or(page.as_str(), |(_, p)| p);
    let part_tokens = bpe.encode_with_special_tokens(part).len();
    assert!(part_tokens <= 800, "the listing's page part is {part_tokens} tokens: {part}");
    let system = content_text(&reqs[0]["messages"][0]);
    let fixed = bpe.encode_with_special_tokens(&system).len()
        + bpe.encode_with_special_tokens(&reqs[0]["tools"].to_string()).len();
    assert!(fixed <= 1_000, "system prompt and tools are {fixed} tokens");
    // The click landed on product 29's button, far below the visible area.
    assert!(last_observation(&reqs[1]).contains("Cart: Product 29"), "{}", last_observation(&reqs[1]));
    let found = tool_results(&reqs[2]).join("\n");
    assert!(
        found.contains("1 line(s) match") && found.contains("Product 3 $12.99 [") && found.contains("Add to cart"),
        "{found}"
    );
    app.stop().await;
}

#[tokio::test]
async fn cards_in_a_same_origin_iframe_and_a_shadow_root_are_seen_and_clicked() {
    let (app, model) = with_model(|s| s).await;
    // Every card's button, in the page, the iframe (16-25) and the shadow root (26-30).
    model.push((1..=30).map(add_to_cart).chain([Reply::done("ok")]).collect());
    let key = app.key().await;
    let start = app.site.url("/shop?layout=frames");
    let r = app.post("/start/run-task", &key, json!({ "taskDetails": "add two", "startingUrl": start })).await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let page = last_observation(&reqs[0]);
    let mut at = 0;
    for n in 1..=30 {
        let pos = page.find(&format!("Product {n} ${}.99 [", n + 9)).unwrap_or_else(|| panic!("product {n}: {page}"));
        assert!(pos > at, "product {n} is in document order");
        at = pos;
    }
    // Each document has its own cart line, which shows the product last added there.
    for (n, req) in reqs.iter().enumerate().take(31).skip(1) {
        let after = last_observation(req);
        assert!(after.contains(&format!("Cart: Product {n}\n")), "the click on product {n} did not land: {after}");
    }
    app.stop().await;
}

#[tokio::test]
async fn cross_origin_frames_are_read_through_their_targets_and_acted_on() {
    let (app, model) = with_model(|s| s).await;
    model.push(vec![
        add_to_cart(2),
        Reply::call("type", json!({ "index": "@Username", "text": "grace" })),
        Reply::call("type", json!({ "index": "@Password", "text": "<secret:pw>" })),
        Reply::call("type", json!({ "index": "@Password", "text": "<secret:framepw>" })),
        Reply::call("click", json!({ "index": "@Sign in" })),
        Reply::done("ok"),
    ]);
    let key = app.key().await;
    let secrets = json!({
        "pw": { "value": "page-only-secret", "domains": ["127.0.0.1"] },
        "framepw": { "value": "frame-secret-77", "domains": ["frame.localhost"] },
    });
    let start = app.site.url("/shop/xo");
    let r = app
        .post(
            "/start/run-task",
            &key,
            json!({ "taskDetails": "use the frames", "startingUrl": start, "secrets": secrets }),
        )
        .await;
    assert_eq!(r.body["status"], "complete", "{}", r.body);
    let reqs = model.requests();
    let page = last_observation(&reqs[0]);
    assert!(page.contains("Partner offers") && page.contains("Product 3 $12.99 ["), "{page}");
    assert!(page.contains("input: Username") && page.contains("input:password: Password"), "{page}");
    assert!(
        last_observation(&reqs[1]).contains("Cart: Product 2\n"),
        "the click landed in the cross-origin frame, once: {:?}\n{}\n---\n{}",
        tool_results(&reqs[1]),
        last_observation(&reqs[0]),
        last_observation(&reqs[1])
    );
    assert!(
        last_observation(&reqs[2]).contains("= \"grace\""),
        "typed into the frame's field: {:?}\n{}",
        tool_results(&reqs[2]),
        last_observation(&reqs[2])
    );
    // A secret for the page's host is not typed into another site's frame; one for the frame's host is.
    assert!(tool_results(&reqs[3]).iter().any(|t| t.contains("SECRET_NOT_ALLOWED")), "{:?}", tool_results(&reqs[3]));
    assert!(tool_results(&reqs[4]).iter().any(|t| t.starts_with("Typed into")), "{:?}", tool_results(&reqs[4]));
    let signed_in = last_observation(&reqs[5]);
    assert!(
        signed_in.contains("Signed in as grace") && signed_in.contains("Your password is <secret:framepw>"),
        "{signed_in}"
    );
    app.stop().await;
}
