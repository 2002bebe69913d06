//! Who may start work now: a per-user cap on open sessions, and a hold on the user's balance for every
//! running task, so parallel work against a small balance cannot overdraw it by more than one hold. Both
//! are counted here, in memory, under one lock (so two requests cannot both take the last place) and
//! given back on drop: a hold is released after its task's real cost is charged, and nothing held
//! survives a crash as a phantom debit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use webpilot_core::{ApiError, ErrorCode, UserId};

#[derive(Debug, Default, Clone, Copy)]
struct Load {
    sessions: usize,
    held_micros: i64,
}

pub(crate) struct Admission {
    max_sessions_per_user: usize,
    hold_micros: i64,
    load: Mutex<HashMap<UserId, Load>>,
}

impl Admission {
    pub fn new(max_sessions_per_user: usize, hold_micros: i64) -> Arc<Self> {
        Arc::new(Admission { max_sessions_per_user, hold_micros: hold_micros.max(0), load: Mutex::new(HashMap::new()) })
    }

    fn with_load<T>(&self, user: &UserId, f: impl FnOnce(&mut Load) -> T) -> T {
        let mut map = self.load.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let load = map.entry(user.clone()).or_default();
        let out = f(load);
        if load.sessions == 0 && load.held_micros == 0 {
            map.remove(user);
        }
        out
    }

    /// What `balance_micros` leaves for new work once the running tasks' holds are set aside.
    fn available(load: &Load, balance_micros: i64) -> i64 {
        balance_micros - load.held_micros
    }

    /// A place for one more session of `user` (429 `SESSION_LIMIT_REACHED` at the cap), if the balance
    /// can still cover new work (402 otherwise).
    pub fn open_session(self: &Arc<Self>, user: &UserId, balance_micros: i64) -> Result<SessionSlot, ApiError> {
        self.with_load(user, |load| {
            if Self::available(load, balance_micros) <= 0 {
                return Err(ApiError::code(ErrorCode::InsufficientBalance));
            }
            if load.sessions >= self.max_sessions_per_user {
                return Err(ApiError::new(
                    ErrorCode::SessionLimitReached,
                    format!(
                        "a user may have at most {} sessions open; terminate one first",
                        self.max_sessions_per_user
                    ),
                ));
            }
            load.sessions += 1;
            Ok(())
        })?;
        Ok(SessionSlot { admission: self.clone(), user: user.clone() })
    }

    /// Sets a task's estimate aside from `balance_micros`; 402 `INSUFFICIENT_BALANCE` when nothing is
    /// left after the holds of `user`'s running tasks.
    pub fn hold(self: &Arc<Self>, user: &UserId, balance_micros: i64) -> Result<Hold, ApiError> {
        self.with_load(user, |load| {
            if Self::available(load, balance_micros) <= 0 {
                return Err(ApiError::code(ErrorCode::InsufficientBalance));
            }
            load.held_micros += self.hold_micros;
            Ok(())
        })?;
        Ok(Hold { admission: self.clone(), user: user.clone(), micros: self.hold_micros })
    }
}

/// One open session of a user; given back when dropped (the session ended).
pub(crate) struct SessionSlot {
    admission: Arc<Admission>,
    user: UserId,
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.admission.with_load(&self.user, |l| l.sessions = l.sessions.saturating_sub(1));
    }
}

/// A running task's hold on its user's balance; released when dropped (after the real cost is charged).
pub(crate) struct Hold {
    admission: Arc<Admission>,
    user: UserId,
    micros: i64,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.admission.with_load(&self.user, |l| l.held_micros -= self.micros);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cap_is_per_user_and_comes_back_on_drop() {
        let a = Admission::new(2, 0);
        let (alice, bob) = (UserId::new(), UserId::new());
        let s1 = a.open_session(&alice, 100).expect("first");
        let _s2 = a.open_session(&alice, 100).expect("second");
        let err = a.open_session(&alice, 100).err().expect("third refused");
        assert_eq!(err.code, ErrorCode::SessionLimitReached);
        assert!(a.open_session(&bob, 100).is_ok(), "other users are not affected");
        drop(s1);
        assert!(a.open_session(&alice, 100).is_ok());
    }

    #[test]
    fn holds_stop_parallel_work_from_overdrawing_a_small_balance() {
        let a = Admission::new(10, 10_000);
        let u = UserId::new();
        let first = a.hold(&u, 4_000).expect("the balance covers new work");
        let err = a.hold(&u, 4_000).err().expect("nothing left after the first hold");
        assert_eq!(err.code, ErrorCode::InsufficientBalance);
        assert_eq!(a.open_session(&u, 4_000).err().map(|e| e.code), Some(ErrorCode::InsufficientBalance));
        drop(first);
        assert!(a.hold(&u, 4_000).is_ok());
        assert!(a.hold(&UserId::new(), 0).is_err(), "an empty balance starts nothing");
    }
}
