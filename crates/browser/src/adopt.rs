//! The session's tabs follow its browser context: every new page in it (opened by a site, or by a DevTools
//! client) becomes a tab, and a closed page's tab is let go.

use crate::error::within;
use crate::page::Inner;
use crate::relay::tabs::RelayTabs;
use crate::tabs::Tab;
use chromiumoxide::cdp::browser_protocol::page::NavigateParams;
use chromiumoxide::cdp::browser_protocol::target::{EventTargetCreated, EventTargetDestroyed, TargetId};
use chromiumoxide::listeners::EventStream;
use futures::StreamExt;
use std::sync::Weak;
use std::time::Duration;

/// Adopts every new page of the session's context as a new, active tab: pages its sites open (they have an
/// opener) and pages a DevTools client opens. Its requests go through the context's egress proxy from the
/// first one on; a page on an avoided domain (refused there) is also closed, so the agent does not land on
/// an error page. A tab whose page is closed (by a DevTools client, or the page itself) is let go.
pub(crate) async fn adopt_pages(
    inner: Weak<Inner>,
    mut created: EventStream<EventTargetCreated>,
    destroyed: EventStream<EventTargetDestroyed>,
) {
    let mut destroyed = destroyed.fuse();
    loop {
        let info = tokio::select! {
            event = created.next() => match event {
                Some(event) => event.target_info.clone(),
                None => return,
            },
            Some(gone) = destroyed.next() => {
                let Some(strong) = inner.upgrade() else { return };
                strong.let_go(&gone.target_id);
                continue;
            }
        };
        let Some(strong) = inner.upgrade() else { return };
        if !strong.owns_page(&info) {
            continue;
        }
        adopt(&strong, &info.target_id, &info.url).await;
    }
}

/// Makes a new page of the session's context one of its tabs now, unless it is one already: a DevTools
/// client's `Target.createTarget` is answered once the page is a tab (`relay`), so the next task sees it.
pub(crate) async fn adopt(strong: &Inner, target: &TargetId, url: &str) {
    if strong.has_tab(target) {
        return;
    }
    // One adoption per page (the watch over new pages and a DevTools client's answer may both ask): a
    // second caller waits for the first to end, so a page gets its identity, and is loaded again, once.
    let mut first = false;
    strong.adoptions.send_if_modified(|under_way| {
        first = under_way.insert(target.clone());
        first
    });
    if !first {
        let mut under_way = strong.adoptions.subscribe();
        let _ = under_way.wait_for(|set| !set.contains(target)).await;
        return;
    }
    let _done = Adoption(strong, target);
    adopt_one(strong, target, url).await;
}

/// Ends the record of an adoption under way, also when the adoption is dropped half way.
struct Adoption<'a>(&'a Inner, &'a TargetId);

impl Drop for Adoption<'_> {
    fn drop(&mut self) {
        self.0.adoptions.send_modify(|under_way| {
            under_way.remove(self.1);
        });
    }
}

/// Attaches one page the site opened and makes it the active tab (or closes it when it is on an avoided
/// domain).
async fn adopt_one(strong: &Inner, target: &TargetId, first_url: &str) {
    let mut page = None;
    for _ in 0..20 {
        if let Ok(p) = strong.opener.process.browser.get_page(target.clone()).await {
            page = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let Some(page) = page else {
        tracing::warn!("a page opened by the site could not be attached");
        return;
    };
    if let Some(identity) = strong.applied_identity() {
        if let Err(e) = identity.apply_to_new(&page, strong.cdp_timeout).await {
            tracing::warn!(error = %e, "giving a new page the session's identity failed");
        }
    }
    let tab = match Tab::prepare(page.clone(), strong.cdp_timeout).await {
        Ok(tab) => tab,
        Err(e) => {
            tracing::warn!(error = %e, "preparing a page opened by the site failed");
            return;
        }
    };
    let url = within(strong.cdp_timeout, "popup url", page.url()).await.ok().flatten().unwrap_or_default();
    if strong.policy.blocks_url(&url) || strong.policy.blocks_url(first_url) {
        tracing::info!("closing a page opened by the site on a blocked domain");
        let _ = within(strong.cdp_timeout, "close popup", page.close()).await;
        return;
    }
    let adopted = {
        let mut tabs = strong.tabs.lock();
        // The session opened it itself (`open_tab`), and has it already.
        if tabs.list.iter().any(|t| t.page.target_id() == target) {
            return;
        }
        if tabs.list.len() < strong.max_tabs {
            tabs.list.push(tab);
            tabs.active = tabs.list.len() - 1;
            true
        } else {
            false
        }
    };
    if adopted {
        strong.tabs_changed();
    } else {
        tracing::info!(max = strong.max_tabs, "closing a page opened by the site beyond the tab cap");
        let _ = within(strong.cdp_timeout, "close popup", page.close()).await;
        return;
    }
    tracing::debug!("a page opened by the site became a tab");
}

/// Starts tab `target`'s navigation to `url` (a page opened blank by `blank_first`), unless it is no tab
/// (closed as on an avoided domain, or beyond the tab cap). The answer to the client follows the start.
pub(crate) async fn go_to(inner: &Inner, target: &TargetId, url: &str) {
    let Some(page) = inner.tab_page(target) else { return };
    if let Err(e) =
        within(inner.cdp_timeout, "open a DevTools page's URL", page.execute(NavigateParams::new(url))).await
    {
        tracing::warn!(error = %e, "sending a page a DevTools client opened to its URL failed");
    }
}

/// The relay's handle on the session's tabs.
impl RelayTabs for Inner {
    fn tab_ids(&self) -> Vec<String> {
        Inner::tab_ids(self)
    }

    fn has_identity(&self) -> bool {
        self.applied_identity().is_some()
    }

    fn adopt(&self, target: String, url: String, go: bool) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            let id = TargetId::from(target);
            adopt(self, &id, &url).await;
            if go {
                go_to(self, &id, &url).await;
            }
        })
    }

    fn pages(&self) -> Vec<chromiumoxide::Page> {
        self.tabs.lock().list.iter().map(|t| t.page.clone()).collect()
    }

    fn cdp_timeout(&self) -> Duration {
        self.cdp_timeout
    }
}
