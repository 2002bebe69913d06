//! Who may start work now: a per-user cap on open sessions, and a hold on the user's balance for every
//! running task, so parallel work against a small balance cannot overdraw it by more than one hold.
//!
//! A node alone counts in memory, under one lock (so two requests cannot both take the last place).
//! Nodes sharing a database count there instead (`Store::claim`), so the cap and the holds are the
//! user's across the cluster, not per node. Either way a place is given back by `release` when its
//! session or task ends (after the task's real cost is charged), or on drop; nothing held survives a
//! crash as a phantom debit (a restarting or lost node's claims are dropped with its work).

use crate::error::SessionError;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use webpilot_core::{ErrorCode, UserId};
use webpilot_store::{ClaimKind, ClaimLimits, ClaimRefusal, Store};

#[derive(Debug, Default, Clone, Copy)]
struct Load {
    sessions: usize,
    held_micros: i64,
}

/// Where places are counted.
enum Counter {
    /// This node alone: in memory.
    Local(Mutex<HashMap<UserId, Load>>),
    /// Every node on `store`: in its `claims` table, recorded as held by `node`.
    Shared { store: Store, node: String },
}

pub(crate) struct Admission {
    max_sessions_per_user: usize,
    hold_micros: i64,
    counter: Counter,
}

impl Admission {
    /// Counts in memory: for a node that shares its database with no other.
    pub fn local(max_sessions_per_user: usize, hold_micros: i64) -> Arc<Self> {
        Self::with(max_sessions_per_user, hold_micros, Counter::Local(Mutex::new(HashMap::new())))
    }

    /// Counts in `store`, which other nodes share, as node `node`.
    pub fn shared(max_sessions_per_user: usize, hold_micros: i64, store: Store, node: String) -> Arc<Self> {
        Self::with(max_sessions_per_user, hold_micros, Counter::Shared { store, node })
    }

    fn with(max_sessions_per_user: usize, hold_micros: i64, counter: Counter) -> Arc<Self> {
        Arc::new(Admission { max_sessions_per_user, hold_micros: hold_micros.max(0), counter })
    }

    fn with_load<T>(map: &Mutex<HashMap<UserId, Load>>, user: &UserId, f: impl FnOnce(&mut Load) -> T) -> T {
        let mut map = map.lock();
        let load = map.entry(user.clone()).or_default();
        let out = f(load);
        if load.sessions == 0 && load.held_micros == 0 {
            map.remove(user);
        }
        out
    }

    fn refused(&self, why: ClaimRefusal) -> SessionError {
        match why {
            ClaimRefusal::Balance | ClaimRefusal::NoUser => SessionError::refused(ErrorCode::InsufficientBalance),
            ClaimRefusal::SessionCap => SessionError::new(
                ErrorCode::SessionLimitReached,
                format!("a user may have at most {} sessions open; terminate one first", self.max_sessions_per_user),
            ),
        }
    }

    /// What `user`'s open sessions and running tasks hold of the balance now (micro-dollars): on this node,
    /// or, with a shared counter, on every node.
    pub async fn held(&self, user: &UserId) -> Result<i64, SessionError> {
        match &self.counter {
            Counter::Local(map) => Ok(Self::with_load(map, user, |load| load.held_micros)),
            Counter::Shared { store, .. } => {
                store.held_micros(user).await.map_err(|e| SessionError::internal("reading the user's holds", e))
            }
        }
    }

    /// Takes one `kind` place for `user`: refused when `balance_micros` less the running tasks' holds
    /// covers no new work (402), or, for a session, at the cap (429 `SESSION_LIMIT_REACHED`). A shared
    /// counter reads the balance itself, in the same transaction.
    async fn take(
        self: &Arc<Self>,
        user: &UserId,
        balance_micros: i64,
        kind: ClaimKind,
        session_hold: i64,
    ) -> Result<Place, SessionError> {
        let session_hold = session_hold.max(0);
        let taken = match &self.counter {
            Counter::Local(map) => Self::with_load(map, user, |load| {
                // The same rule as `Store::claim`: a session must be covered whole, a task needs something left.
                let available = balance_micros - load.held_micros;
                if available <= 0 || (kind == ClaimKind::Session && available < session_hold) {
                    return Err(self.refused(ClaimRefusal::Balance));
                }
                match kind {
                    ClaimKind::Session if load.sessions >= self.max_sessions_per_user => {
                        Err(self.refused(ClaimRefusal::SessionCap))
                    }
                    ClaimKind::Session => {
                        load.sessions += 1;
                        load.held_micros += session_hold;
                        Ok(Taken::Session(session_hold))
                    }
                    ClaimKind::Task => {
                        load.held_micros += self.hold_micros;
                        Ok(Taken::Hold(self.hold_micros))
                    }
                }
            })?,
            Counter::Shared { store, node } => {
                let limits = ClaimLimits {
                    max_sessions: i64::try_from(self.max_sessions_per_user).unwrap_or(i64::MAX),
                    hold_micros: match kind {
                        ClaimKind::Session => session_hold,
                        ClaimKind::Task => self.hold_micros,
                    },
                };
                match store.claim(user, node, kind, limits).await {
                    Ok(Ok(id)) => Taken::Claim(id),
                    Ok(Err(why)) => return Err(self.refused(why)),
                    Err(e) => return Err(SessionError::internal("counting the user's sessions and tasks", e)),
                }
            }
        };
        Ok(Place { admission: self.clone(), user: user.clone(), taken })
    }

    /// A place for one more session of `user` (429 `SESSION_LIMIT_REACHED` at the cap), holding `hold_micros`
    /// (the price of its whole maxDuration) until it ends: refused with 402 unless the balance, less
    /// the user's other holds, covers it.
    pub async fn open_session(
        self: &Arc<Self>,
        user: &UserId,
        balance_micros: i64,
        hold_micros: i64,
    ) -> Result<SessionSlot, SessionError> {
        self.take(user, balance_micros, ClaimKind::Session, hold_micros).await.map(SessionSlot)
    }

    /// Sets a task's estimate aside from `balance_micros`; 402 `INSUFFICIENT_BALANCE` when nothing is
    /// left after the holds of `user`'s running tasks.
    pub async fn hold(self: &Arc<Self>, user: &UserId, balance_micros: i64) -> Result<Hold, SessionError> {
        self.take(user, balance_micros, ClaimKind::Task, 0).await.map(Hold)
    }
}

/// What a place holds until it is given back.
enum Taken {
    /// A session, holding its maxDuration's price.
    Session(i64),
    Hold(i64),
    Claim(String),
    Released,
}

/// A user's place: an open session ([`SessionSlot`]) or a running task's hold ([`Hold`]).
struct Place {
    admission: Arc<Admission>,
    user: UserId,
    taken: Taken,
}

/// One open session of a user, given back when dropped or [released](SessionSlot::release).
pub(crate) struct SessionSlot(Place);

impl SessionSlot {
    /// Gives the session's place back now (it ended), so the user's next request sees it free on every node.
    pub async fn release(&mut self) {
        self.0.release().await
    }
}

/// A running task's hold on its user's balance, given back when dropped or [released](Hold::release).
pub(crate) struct Hold(Place);

impl Hold {
    /// Gives the hold back now (the task's cost was charged).
    pub async fn release(&mut self) {
        self.0.release().await
    }

    /// Moves the hold out, leaving this one released (it is given back by whoever holds the result).
    pub fn take(&mut self) -> Hold {
        Hold(self.0.take())
    }
}

impl Place {
    /// Gives the place back now, so the user's next request sees it free on every node.
    async fn release(&mut self) {
        if let Some(claim) = self.give_back_locally() {
            if let Counter::Shared { store, .. } = &self.admission.counter {
                if let Err(e) = store.release_claim(&claim).await {
                    tracing::warn!(error = %e, "giving back a claim failed; retrying in the background");
                    release_eventually(store.clone(), claim);
                }
            }
        }
    }

    /// Moves the place out, leaving this one released (it is given back by whoever holds the result).
    fn take(&mut self) -> Place {
        let taken = std::mem::replace(&mut self.taken, Taken::Released);
        Place { admission: self.admission.clone(), user: self.user.clone(), taken }
    }

    /// Releases a local place at once; returns the claim a shared one still has to delete.
    fn give_back_locally(&mut self) -> Option<String> {
        let (user, admission) = (&self.user, &self.admission);
        match (std::mem::replace(&mut self.taken, Taken::Released), &admission.counter) {
            (Taken::Session(micros), Counter::Local(map)) => Admission::with_load(map, user, |l| {
                l.sessions = l.sessions.saturating_sub(1);
                l.held_micros -= micros;
            }),
            (Taken::Hold(micros), Counter::Local(map)) => Admission::with_load(map, user, |l| l.held_micros -= micros),
            (Taken::Claim(id), _) => return Some(id),
            _ => {}
        }
        None
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let Some(claim) = self.give_back_locally() else { return };
        if let Counter::Shared { store, .. } = &self.admission.counter {
            release_eventually(store.clone(), claim);
        }
    }
}

/// Deletes `claim` in the background, retrying (every second, for up to ten minutes) while the database is
/// away, so a place is not lost to a short outage. Past that, or outside a runtime, the claim stays until
/// this node stops or restarts (both drop its claims).
fn release_eventually(store: Store, claim: String) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("a claim was dropped outside the runtime; the node drops it when it stops");
        return;
    };
    rt.spawn(async move {
        let release = || {
            let (store, claim) = (store.clone(), claim.clone());
            async move { store.release_claim(&claim).await }
        };
        if !retry(RELEASE_EVERY, RELEASE_ATTEMPTS, release).await {
            tracing::error!("a claim could not be given back for ten minutes; the node drops it when it stops");
        }
    });
}

/// How often a claim the database did not delete is tried again, and how many times in all.
const RELEASE_EVERY: Duration = Duration::from_secs(1);
const RELEASE_ATTEMPTS: u32 = 600;

/// Runs `op` until it succeeds, at most `attempts` times, `every` apart (the first at once); whether it
/// succeeded. The first failure is logged.
async fn retry<E, Fut>(every: Duration, attempts: u32, mut op: impl FnMut() -> Fut) -> bool
where
    E: std::fmt::Display,
    Fut: Future<Output = Result<(), E>>,
{
    for attempt in 0..attempts {
        if attempt > 0 {
            tokio::time::sleep(every).await;
        }
        match op().await {
            Ok(()) => return true,
            Err(e) if attempt == 0 => tracing::warn!(error = %e, "giving back a claim failed; retrying"),
            Err(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_session_cap_is_per_user_and_comes_back_on_drop() {
        let a = Admission::local(2, 0);
        let (alice, bob) = (UserId::generate(), UserId::generate());
        let s1 = a.open_session(&alice, 100, 0).await.expect("first");
        let _s2 = a.open_session(&alice, 100, 0).await.expect("second");
        let err = a.open_session(&alice, 100, 0).await.err().expect("third refused");
        assert_eq!(webpilot_core::Coded::code(&err), ErrorCode::SessionLimitReached);
        assert!(a.open_session(&bob, 100, 0).await.is_ok(), "other users are not affected");
        drop(s1);
        assert!(a.open_session(&alice, 100, 0).await.is_ok());
    }

    #[tokio::test]
    async fn holds_stop_parallel_work_from_overdrawing_a_small_balance() {
        let a = Admission::local(10, 10_000);
        let u = UserId::generate();
        let mut first = a.hold(&u, 4_000).await.expect("the balance covers new work");
        let err = a.hold(&u, 4_000).await.err().expect("nothing left after the first hold");
        assert_eq!(webpilot_core::Coded::code(&err), ErrorCode::InsufficientBalance);
        assert_eq!(
            a.open_session(&u, 4_000, 0).await.err().map(|e| webpilot_core::Coded::code(&e)),
            Some(ErrorCode::InsufficientBalance)
        );
        first.release().await;
        assert!(a.hold(&u, 4_000).await.is_ok());
        assert!(a.hold(&UserId::generate(), 0).await.is_err(), "an empty balance starts nothing");
    }

    #[tokio::test]
    async fn a_session_holds_its_whole_time_on_the_balance() {
        let a = Admission::local(10, 10_000);
        let u = UserId::generate();
        let err = a.open_session(&u, 7_000, 15_000).await.err().expect("7,000 cannot cover a 15,000 session");
        assert_eq!(webpilot_core::Coded::code(&err), ErrorCode::InsufficientBalance);
        let mut first = a.open_session(&u, 7_000, 5_000).await.expect("covered");
        assert!(a.open_session(&u, 7_000, 5_000).await.is_err(), "2,000 left");
        assert!(a.open_session(&u, 7_000, 2_000).await.is_ok(), "exactly covered");
        first.release().await;
        assert!(a.open_session(&u, 7_000, 5_000).await.is_ok(), "the hold came back with the place");
    }

    #[tokio::test]
    async fn shared_admission_counts_every_node_on_the_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open_sqlite(&dir.path().join("t.db")).await.expect("store");
        let user = store.create_user("u", 8_000).await.expect("user");
        let a = Admission::shared(1, 10_000, store.clone(), "a".into());
        let b = Admission::shared(1, 10_000, store.clone(), "b".into());
        let mut on_a = a.open_session(&user.id, 0, 0).await.expect("a session on a");
        let err = b.open_session(&user.id, 0, 0).await.err().expect("the cap is the user's, not the node's");
        assert_eq!(webpilot_core::Coded::code(&err), ErrorCode::SessionLimitReached);
        on_a.release().await;
        let _on_b = b.open_session(&user.id, 0, 0).await.expect("released on a, free on b");
        let held = a.hold(&user.id, 0).await.expect("the balance covers one hold");
        assert_eq!(
            b.hold(&user.id, 0).await.err().map(|e| webpilot_core::Coded::code(&e)),
            Some(ErrorCode::InsufficientBalance)
        );
        drop(held);
        for _ in 0..50 {
            if b.hold(&user.id, 0).await.is_ok() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("a dropped hold was never given back");
    }

    /// An operation that fails `failures` times, recording when (s after the first try) each try began.
    fn flaky(failures: usize, times: &Arc<Mutex<Vec<u64>>>) -> impl FnMut() -> std::future::Ready<Result<(), String>> {
        let (start, times) = (tokio::time::Instant::now(), times.clone());
        move || {
            let mut times = times.lock();
            times.push(start.elapsed().as_secs());
            let fails = times.len() <= failures;
            std::future::ready(if fails { Err("database away".into()) } else { Ok(()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_claim_is_given_back_a_second_apart_until_the_database_answers() {
        let times = Arc::new(Mutex::new(Vec::new()));
        let start = tokio::time::Instant::now();
        assert!(retry(RELEASE_EVERY, RELEASE_ATTEMPTS, flaky(2, &times)).await);
        assert_eq!(*times.lock(), [0, 1, 2], "tried at once, then every second");
        assert_eq!(start.elapsed(), Duration::from_secs(2), "given back on the third try, not later");
    }

    #[tokio::test(start_paused = true)]
    async fn giving_back_a_claim_stops_after_ten_minutes() {
        let times = Arc::new(Mutex::new(Vec::new()));
        let start = tokio::time::Instant::now();
        assert!(!retry(RELEASE_EVERY, RELEASE_ATTEMPTS, flaky(usize::MAX, &times)).await);
        let times = times.lock();
        assert_eq!(times.len(), 600);
        assert_eq!(times.last(), Some(&599));
        assert_eq!(start.elapsed(), Duration::from_secs(599), "no wait after the last try");
    }
}
