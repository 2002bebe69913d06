//! Integration tests for the fixture website, using a plain HTTP client.

use std::time::{Duration, Instant};

use webpilot_testkit::FixtureSite;

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().expect("build HTTP client")
}

async fn get(url: &str) -> reqwest::Response {
    client().get(url).send().await.expect("send request")
}

#[tokio::test]
async fn home_has_title_and_links() {
    let site = FixtureSite::start().await;
    let response = get(&site.url("/")).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.expect("body");
    assert!(body.contains("<title>Fixture Home</title>"), "{body}");
    assert!(body.contains(r#"<h1 id="heading">Fixture Home</h1>"#));
    assert!(body.contains(r#"<a href="/pricing">Pricing</a>"#));
    assert!(body.contains(r#"<a href="/form">Contact form</a>"#));
    assert!(body.contains(r#"<a href="/slow">Slow page</a>"#));
}

#[tokio::test]
async fn set_cookie_sends_header_and_show_cookie_reads_it() {
    let site = FixtureSite::start().await;
    let response = get(&site.url("/set-cookie?value=abc")).await;
    assert_eq!(response.status(), 200);
    let header = response.headers().get("set-cookie").expect("Set-Cookie header").to_str().expect("ascii header");
    assert_eq!(header, "fixture=abc; Path=/");
    let body = response.text().await.expect("body");
    assert!(body.contains(r#"localStorage.setItem('fixture', "abc")"#), "{body}");

    let default = get(&site.url("/set-cookie")).await;
    assert_eq!(default.headers().get("set-cookie").map(|v| v.as_bytes()), Some(&b"fixture=yes; Path=/"[..]));

    let with_cookie = client()
        .get(site.url("/show-cookie"))
        .header("cookie", "other=1; fixture=abc")
        .send()
        .await
        .expect("send request");
    let body = with_cookie.text().await.expect("body");
    assert!(body.contains(r#"<p id="cookie">abc</p>"#), "{body}");

    let body = get(&site.url("/show-cookie")).await.text().await.expect("body");
    assert!(body.contains(r#"<p id="cookie">none</p>"#), "{body}");
    assert!(site.requests().iter().any(|r| r.cookie.as_deref() == Some("other=1; fixture=abc")));
}

#[tokio::test]
async fn form_submission_is_escaped() {
    let site = FixtureSite::start().await;
    let response = get(&site.url("/form/submitted?name=%3Cb%3E&email=x")).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.expect("body");
    assert!(body.contains("<title>Thanks</title>"));
    assert!(body.contains(r#"<p id="result">Thanks &lt;b&gt; (x)</p>"#), "{body}");
}

#[tokio::test]
async fn slow_page_waits() {
    let site = FixtureSite::start().await;
    let started = Instant::now();
    let response = get(&site.url("/slow?ms=50")).await;
    assert_eq!(response.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert!(response.text().await.expect("body").contains("<title>Slow page</title>"));
}

#[tokio::test]
async fn requests_are_recorded_with_host_and_path() {
    let site = FixtureSite::start().await;
    get(&site.url("/pricing?x=1")).await;
    let response = client()
        .get(site.url("/pixel.png"))
        .header("host", format!("tracker.localhost:{}", site.port()))
        .send()
        .await
        .expect("send request");
    assert_eq!(response.headers().get("content-type").map(|v| v.as_bytes()), Some(&b"image/png"[..]));
    assert!(response.bytes().await.expect("body").starts_with(b"\x89PNG"));

    let requests = site.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].host, "127.0.0.1");
    assert_eq!(requests[0].path, "/pricing");
    assert_eq!(requests[0].query.as_deref(), Some("x=1"));
    assert_eq!(requests[1].host, "tracker.localhost");
    assert_eq!(requests[1].path, "/pixel.png");

    assert!(site.was_requested(None, "/pricing"));
    assert!(site.was_requested(Some("127.0.0.1"), "/pricing"));
    assert!(site.was_requested(Some("tracker.localhost"), "/pixel.png"));
    assert!(!site.was_requested(Some("127.0.0.1"), "/pixel.png"));
    assert!(!site.was_requested(None, "/ok.png"));
}

#[tokio::test]
async fn tracker_page_uses_real_port() {
    let site = FixtureSite::start().await;
    let body = get(&site.url("/tracker")).await.text().await.expect("body");
    assert!(body.contains(&format!(r#"src="{}""#, site.url_on("tracker.localhost", "/pixel.png"))));
    assert!(body.contains(&format!(r#"src="{}""#, site.url("/ok.png"))));
    assert_eq!(site.url_on("tracker.localhost", "/a"), format!("http://tracker.localhost:{}/a", site.port()));
}

#[tokio::test]
async fn echo_headers_omits_cookie() {
    let site = FixtureSite::start().await;
    let response = client()
        .get(site.url("/echo-headers"))
        .header("x-test", "hello")
        .header("cookie", "fixture=secret")
        .send()
        .await
        .expect("send request");
    let json: serde_json::Value = response.json().await.expect("json body");
    assert_eq!(json["x-test"], "hello");
    assert!(json.get("cookie").is_none(), "{json}");
}

#[tokio::test]
async fn unknown_path_is_404_and_recorded() {
    let site = FixtureSite::start().await;
    let response = get(&site.url("/no/such/page")).await;
    assert_eq!(response.status(), 404);
    assert!(response.text().await.expect("body").contains("<title>Not found</title>"));
    assert!(site.was_requested(Some("127.0.0.1"), "/no/such/page"));
}

#[tokio::test]
async fn server_stops_when_dropped() {
    let site = FixtureSite::start().await;
    let url = site.url("/");
    drop(site);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let result = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("build HTTP client")
        .get(url)
        .send()
        .await;
    assert!(result.is_err(), "server still answering after drop");
}
