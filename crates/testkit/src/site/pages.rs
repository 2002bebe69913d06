//! Static fixture pages: home, pricing, plan details, contact form, counter, vanish and choose.

use axum::response::Html;

use super::html::page;

/// `/`: heading and links to the other main pages.
pub(crate) async fn home() -> Html<String> {
    page(
        "Fixture Home",
        r#"<h1 id="heading">Fixture Home</h1>
<ul>
<li><a href="/pricing">Pricing</a></li>
<li><a href="/form">Contact form</a></li>
<li><a href="/slow">Slow page</a></li>
</ul>"#,
    )
}

/// `/pricing`: three plans, the cheapest one, and two links.
pub(crate) async fn pricing() -> Html<String> {
    page(
        "Pricing",
        r#"<h1>Pricing</h1>
<ul id="plans">
<li id="plan-basic">Basic $9</li>
<li id="plan-pro">Pro $29</li>
<li id="plan-team">Team $99</li>
</ul>
<p>Cheapest plan:</p>
<p id="cheapest">Basic $9</p>
<p><a href="/">Back home</a> | <a href="/pricing/details">Next page</a></p>"#,
    )
}

/// `/pricing/details`: one paragraph.
pub(crate) async fn pricing_details() -> Html<String> {
    page(
        "Plan details",
        r#"<h1>Plan details</h1>
<p id="details">All plans include support.</p>
<p><a href="/pricing">Back to pricing</a></p>"#,
    )
}

/// `/form`: a GET form posting to `/form/submitted`.
pub(crate) async fn form() -> Html<String> {
    page(
        "Contact",
        r#"<h1>Contact</h1>
<form id="contact" method="get" action="/form/submitted">
<p><label for="name">Your name</label> <input id="name" name="name"></p>
<p><input name="email" placeholder="Email address"></p>
<p><textarea name="message" aria-label="Message" rows="3" cols="40"></textarea></p>
<p><button type="submit">Send</button></p>
</form>"#,
    )
}

/// `/counter`: absolutely positioned widgets for click, double-click, typing and key tests.
pub(crate) async fn counter() -> Html<String> {
    page(
        "Counter",
        r#"<style>body { margin: 0; } #inc { font-size: 20px; } p { margin: 0; }</style>
<p id="count" style="position:absolute;left:100px;top:10px">0</p>
<button id="inc" style="position:absolute;left:100px;top:100px;width:200px;height:80px">Add one</button>
<p id="dbl" style="position:absolute;left:100px;top:200px"></p>
<p id="typed" style="position:absolute;left:400px;top:10px"></p>
<p id="keys" style="position:absolute;left:400px;top:50px"></p>
<input id="box" aria-label="Type here" style="position:absolute;left:400px;top:100px;width:300px;height:40px">
<script>
(function () {
  var count = 0;
  var inc = document.getElementById('inc');
  var box = document.getElementById('box');
  inc.addEventListener('click', function () {
    count += 1;
    document.getElementById('count').textContent = String(count);
  });
  inc.addEventListener('dblclick', function () {
    document.getElementById('dbl').textContent = 'double';
  });
  box.addEventListener('input', function () {
    document.getElementById('typed').textContent = box.value;
  });
  document.addEventListener('keydown', function (event) {
    document.getElementById('keys').textContent = event.key;
  });
  document.title = 'Counter';
})();
</script>"#,
    )
}

/// `/vanish`: the "Disappear" button removes itself 300 ms after load; "Stay" stays.
pub(crate) async fn vanish() -> Html<String> {
    page(
        "Vanishing",
        r#"<h1>Vanishing</h1>
<p><button id="disappear" type="button">Disappear</button> <button id="stay" type="button">Stay</button></p>
<script>
window.addEventListener('load', function () {
  setTimeout(function () {
    var button = document.getElementById('disappear');
    if (button) { button.remove(); }
  }, 300);
});
</script>"#,
    )
}

/// `/choose`: a labelled select whose choice is shown in `#choice`.
pub(crate) async fn choose() -> Html<String> {
    page(
        "Choose a plan",
        r#"<h1>Choose a plan</h1>
<label for="plan">Plan</label>
<select id="plan"><option value="basic">Basic</option><option value="pro">Pro</option><option value="team">Team</option></select>
<p id="choice">basic</p>
<script>
document.getElementById('plan').addEventListener('change', function (e) {
  document.getElementById('choice').textContent = e.target.value;
});
</script>"#,
    )
}

/// `/hog`: a page that takes 32 MiB more memory every 100 ms and keeps it (for the per-session memory cap).
pub(crate) async fn hog() -> Html<String> {
    page(
        "Hog",
        r#"<h1>Hog</h1><p id="held">0</p>
<script>
window.held = [];
setInterval(() => {
  const block = new Float64Array(4 * 1024 * 1024);
  block.fill(Math.random());
  window.held.push(block);
  document.getElementById('held').textContent = String(window.held.length * 32);
}, 100);
</script>"#,
    )
}
